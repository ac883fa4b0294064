/**
 * The console's routes, as paths under `<base path>/console` (the server answers the page for
 * every one of them): `/apps`, `/apps/{appId}`, `/runs`, `/runs/{executionId}`; the console's
 * root shows the apps. Anything else is `notFound`.
 */

/** Where the console is. */
export type Route =
  | { readonly name: "apps" }
  | { readonly name: "app"; readonly appId: string }
  | { readonly name: "runs" }
  | { readonly name: "run"; readonly executionId: string }
  | { readonly name: "notFound" }

/** The route of a path under the console (`/`, `/apps/…`). */
export const routeOf = (path: string): Route => {
  const segments = path.split("/").filter((s) => s !== "").map((s) => {
    try {
      return decodeURIComponent(s)
    } catch {
      return s
    }
  })
  const [first, second, ...rest] = segments
  if (rest.length > 0) return { name: "notFound" }
  if (first === undefined || (first === "apps" && second === undefined)) return { name: "apps" }
  if (first === "apps" && second !== undefined) return { name: "app", appId: second }
  if (first === "runs" && second === undefined) return { name: "runs" }
  if (first === "runs" && second !== undefined) return { name: "run", executionId: second }
  return { name: "notFound" }
}

/** The path of a route under the console. */
export const pathOf = (route: Route): string => {
  switch (route.name) {
    case "apps":
      return "/apps"
    case "app":
      return `/apps/${encodeURIComponent(route.appId)}`
    case "runs":
      return "/runs"
    case "run":
      return `/runs/${encodeURIComponent(route.executionId)}`
    case "notFound":
      return "/"
  }
}
