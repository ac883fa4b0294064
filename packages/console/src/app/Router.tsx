/**
 * The console's routes, as paths under `<base path>/console` (the server answers the page for
 * every one of them): `/apps`, `/apps/{appId}`, `/runs`, `/runs/{executionId}`; the console's
 * root shows the apps. Links change the path with the History API, without reloading the page.
 */
import { type ComponentChildren, createContext } from "preact"
import { useContext } from "preact/hooks"

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

/** Moving around the console. */
export interface Navigation {
  readonly route: Route
  /** The URL path of a route, to put in a link. */
  readonly href: (route: Route) => string
  /** Goes to a route (a new history entry). */
  readonly go: (route: Route) => void
}

export const NavigationContext = createContext<Navigation | undefined>(undefined)

/** The navigation of the console. */
export const useNavigation = (): Navigation => {
  const navigation = useContext(NavigationContext)
  if (navigation === undefined) throw new Error("useNavigation outside the console")
  return navigation
}

/** A link to a route; a plain click moves in the page, others (new tab, window) work as usual. */
export const Link = (
  { children, className, to, current }: {
    readonly to: Route
    readonly children: ComponentChildren
    readonly className?: string
    readonly current?: boolean
  }
) => {
  const navigation = useNavigation()
  return (
    <a
      href={navigation.href(to)}
      class={className}
      aria-current={current === true ? "page" : undefined}
      onClick={(event) => {
        if (event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return
        event.preventDefault()
        navigation.go(to)
      }}
    >
      {children}
    </a>
  )
}
