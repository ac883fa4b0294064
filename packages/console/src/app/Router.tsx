/**
 * Moving around the console: where it is (`Routes`), and links that change the path with the
 * History API, without reloading the page.
 */
import { type ComponentChildren, createContext } from "preact"
import { useContext } from "preact/hooks"
import type { Route } from "./Routes.js"

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
