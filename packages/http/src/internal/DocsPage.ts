/**
 * The API reference page at `/docs`: @effect/platform's Scalar page (`HttpApiScalar`) for the
 * API definition, with Scalar's script inline so the page needs nothing from the network. It is
 * rendered once, through the router @effect/platform serves it on, and kept as text. This module
 * is loaded on the first request for `/docs` only: the page is several megabytes.
 */
import { Api } from "@appexec/api"
import { HttpApiScalar, HttpLayerRouter } from "@effect/platform"

/** The HTML of the page. */
export const render = async (): Promise<string> => {
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
