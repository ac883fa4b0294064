/**
 * @appexec/nodes-comfyui: `provider.comfyui`, which runs ComfyUI workflows (API format) on
 * self-hosted ComfyUI servers over their HTTP and websocket API, the servers' settings, pool and
 * operator view, and the workflow helpers it is written with.
 */
export * as ComfyuiApp from "./ComfyuiApp.js"
export * as ComfyuiNodes from "./ComfyuiNodes.js"
export { comfyuiNodes } from "./ComfyuiNodes.js"
export * as ComfyuiPool from "./ComfyuiPool.js"
export * as ComfyuiServers from "./ComfyuiServers.js"
export * as ComfyuiSettings from "./ComfyuiSettings.js"
export * as ProviderComfyui from "./ProviderComfyui.js"
export * as Workflow from "./Workflow.js"
