/**
 * The console: signed out, the sign-in view; signed in, the frame and the view of the route. The
 * key lives in session storage (`Session`) and in this component's state; a 401 on any call
 * forgets it and comes back here with "Your key was refused: sign in again".
 */
import { useEffect, useMemo, useState } from "preact/hooks"
import { makeApi, REFUSED } from "./api/Api.js"
import { ApiContext } from "./api/Remote.js"
import * as Session from "./api/Session.js"
import { useTitle } from "./components/Feedback.js"
import { AppsView } from "./pages/AppsView.js"
import { AppView } from "./pages/AppView.js"
import { RunsView } from "./pages/RunsView.js"
import { RunView } from "./pages/RunView.js"
import { SignIn } from "./pages/SignIn.js"
import { Link, type Navigation, NavigationContext } from "./Router.js"
import { pathOf, type Route, routeOf } from "./Routes.js"
import { Shell } from "./Shell.js"

/** The console's path under the base path. */
const CONSOLE = "/console"

const NotFound = () => {
  useTitle("Not found")
  return (
    <section>
      <h1>Page not found</h1>
      <p>
        There is nothing here. <Link to={{ name: "apps" }}>See the apps</Link>.
      </p>
    </section>
  )
}

const View = ({ route }: { readonly route: Route }) => {
  switch (route.name) {
    case "apps":
      return <AppsView />
    case "app":
      return <AppView key={route.appId} appId={route.appId} />
    case "runs":
      return <RunsView />
    case "run":
      return <RunView key={route.executionId} executionId={route.executionId} />
    case "notFound":
      return <NotFound />
  }
}

/** The console mounted at `<basePath>/console`. */
export const Console = ({ basePath }: { readonly basePath: string }) => {
  const root = `${basePath}${CONSOLE}`
  const pathNow = () => (location.pathname.startsWith(root) ? location.pathname.slice(root.length) : "/")
  const [key, setKey] = useState<string | null>(Session.readKey)
  const [notice, setNotice] = useState<string | undefined>(undefined)
  const [path, setPath] = useState(pathNow)

  useEffect(() => {
    const moved = () => setPath(pathNow())
    addEventListener("popstate", moved)
    return () => removeEventListener("popstate", moved)
  }, [])

  const api = useMemo(
    () =>
      key === null ? undefined : makeApi(basePath, key, () => {
        Session.clearKey()
        setKey(null)
        setNotice(REFUSED)
      }),
    [key]
  )

  const navigation = useMemo((): Navigation => {
    const href = (route: Route) => `${root}${pathOf(route)}`
    return {
      route: routeOf(path),
      href,
      go: (route) => {
        history.pushState(null, "", href(route))
        setPath(pathOf(route))
        scrollTo(0, 0)
      }
    }
  }, [path])

  if (api === undefined || key === null) {
    return (
      <SignIn
        basePath={basePath}
        notice={notice}
        onSignIn={(accepted) => {
          Session.saveKey(accepted)
          setNotice(undefined)
          setKey(accepted)
        }}
      />
    )
  }
  return (
    <ApiContext.Provider value={api}>
      <NavigationContext.Provider value={navigation}>
        <Shell
          keyHint={Session.keyHint(key)}
          onSignOut={() => {
            Session.clearKey()
            setKey(null)
            setNotice("You signed out.")
          }}
        >
          <View route={navigation.route} />
        </Shell>
      </NavigationContext.Provider>
    </ApiContext.Provider>
  )
}
