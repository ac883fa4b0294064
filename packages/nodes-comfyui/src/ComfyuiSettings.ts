/**
 * The operator's settings of `provider.comfyui`: the ComfyUI servers of the instance (the
 * `--comfyui URL[,URL…]` setting, `APPEXEC_COMFYUI`), the secret sent as `Authorization` to
 * servers behind a proxy, how often a run is polled when its websocket is quiet or closed, and
 * the time limit of each request to a server.
 */
import { Config, ConfigError, Context, Duration, Either, Layer, Option } from "effect"

/** The settings of `provider.comfyui`. */
export interface Settings {
  /**
   * The ComfyUI servers' root URLs (`http://gpu-1:8188`), without a trailing `/`, each optionally
   * followed by `*N`, the prompts of a process it runs at once (`http://gpu-1:8188*2`; default 1).
   */
  readonly servers: ReadonlyArray<string>
  /**
   * The name of the operator's secret whose value (`Bearer …`, `Basic …`) goes as `Authorization`
   * with every request and websocket to the servers, for servers behind an authenticating proxy.
   */
  readonly authSecret?: string | undefined
  /** How long a run's websocket may be quiet before the server is asked about the prompt. */
  readonly pollInterval: Duration.DurationInput
  /** Time limit of each HTTP request to a server. */
  readonly requestTimeout: Duration.DurationInput
}

/** The defaults: no server, a poll every 2 seconds of quiet, 30 s a request. */
export const defaults: Settings = {
  servers: [],
  pollInterval: Duration.seconds(2),
  requestTimeout: Duration.seconds(30)
}

/** The settings of `provider.comfyui` in force. */
export class ComfyuiSettings
  extends Context.Tag("@appexec/nodes-comfyui/ComfyuiSettings")<ComfyuiSettings, Settings>()
{}

/** A server of the settings: its root URL and how many prompts of a process it runs at once. */
export interface Server {
  readonly url: string
  readonly capacity: number
}

/** The URL and capacity of a server as the settings write it (`URL` or `URL*N`). */
export const serverOf = (spec: string): Server => {
  const match = /^(.*)\*(\d+)$/.exec(spec)
  return match === null ? { url: spec, capacity: 1 } : { url: match[1]!, capacity: Number(match[2]) }
}

/**
 * The servers of a comma-separated list, each an http(s) root URL (written back without a
 * trailing `/`), optionally followed by `*N` (1 to 64), or why not.
 */
export const parseServers = (text: string): Either.Either<ReadonlyArray<string>, string> => {
  const servers: Array<string> = []
  for (const item of text.split(",").map((s) => s.trim()).filter((s) => s !== "")) {
    const { capacity, url: part } = serverOf(item)
    if (!Number.isInteger(capacity) || capacity < 1 || capacity > 64) {
      return Either.left(`'${item}': the capacity after * is a whole number from 1 to 64`)
    }
    if (!URL.canParse(part)) return Either.left(`'${part}' is not a URL`)
    const url = new URL(part)
    if (url.protocol !== "http:" && url.protocol !== "https:") return Either.left(`'${part}' is not an http(s) URL`)
    if (url.search !== "" || url.hash !== "" || url.username !== "" || url.password !== "") {
      return Either.left(`'${part}' must be a server's root URL, with no query, fragment or credentials`)
    }
    servers.push(`${url.origin}${url.pathname.replace(/\/+$/, "")}${capacity === 1 ? "" : `*${capacity}`}`)
  }
  return Either.right(servers)
}

/** The defaults with `overrides` applied. */
export const make = (overrides: Partial<Settings> = {}): Settings => ({ ...defaults, ...overrides })

/** Layer of the defaults with `overrides` applied. */
export const layer = (overrides: Partial<Settings> = {}): Layer.Layer<ComfyuiSettings> =>
  Layer.succeed(ComfyuiSettings, make(overrides))

/** The name of the variable of the servers' list. */
export const SERVERS_ENV = "APPEXEC_COMFYUI"

/** The name of the variable of the secret sent as `Authorization`. */
export const AUTH_SECRET_ENV = "APPEXEC_COMFYUI_AUTH_SECRET"

/**
 * The settings from effect `Config`: the servers of `APPEXEC_COMFYUI` (none when unset) and the
 * secret named by `APPEXEC_COMFYUI_AUTH_SECRET`, the rest defaults.
 */
export const config: Config.Config<Settings> = Config.all({
  servers: Config.string(SERVERS_ENV).pipe(
    Config.withDefault(""),
    Config.mapOrFail((text) =>
      Either.mapLeft(parseServers(text), (reason) => ConfigError.InvalidData([SERVERS_ENV], reason))
    )
  ),
  authSecret: Config.option(Config.nonEmptyString(AUTH_SECRET_ENV))
}).pipe(
  Config.map(({ authSecret, servers }) =>
    make({ servers, ...(Option.isSome(authSecret) ? { authSecret: authSecret.value } : {}) })
  )
)
