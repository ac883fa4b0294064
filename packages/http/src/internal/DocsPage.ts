/**
 * The API reference page at `/docs`: @effect/platform's Scalar page (`HttpApiScalar`) for the
 * API definition, with Scalar's script inline so the page needs nothing from the network. It is
 * rendered once, through the router @effect/platform serves it on, and kept as text. The page's
 * modules are loaded on the first request for `/docs` only (the page is megabytes of script), by
 * module path, so that a bundler can leave them out of its bundle and load them from the
 * installed @effect/platform then (`appexec`'s bundle does).
 */
import { Api } from "@appexec/api"

/** The HTML of the page. */
export const render = async (): Promise<string> => {
  const [HttpApiScalar, HttpLayerRouter] = await Promise.all([
    import("@effect/platform/HttpApiScalar"),
    import("@effect/platform/HttpLayerRouter")
  ])
  const { handler, dispose } = HttpLayerRouter.toWebHandler(
    HttpApiScalar.layerHttpLayerRouter({ api: Api.AppexecApi, path: "/docs", scalar: { hideTestRequestButton: true } }),
    { disableLogger: true }
  )
  try {
    const response = await handler(new Request("http://localhost/docs"))
    if (!response.ok) throw new Error(`the reference page answered ${response.status}`)
    return await response.text()
  } finally {
    await dispose()
  }
}
