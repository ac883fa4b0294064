/**
 * The text forms of settings' values (docs/cli.md#settings): how a flag, a variable or a value of
 * the config file is read, and how a value is shown back (in help, in docs/cli.md, by `appexec
 * config check`); what one shows, it reads back. Every duration is read by core's one parser
 * (`AppexecConfig.parseDuration`): `500ms`, `30s`, `2m`, `12h`, `7d`.
 */
import { AppexecConfig, SigningKeys } from "@appexec/core"
import { PostgresClient } from "@appexec/postgres"
import { Duration, Either, Option, Schema } from "effect"
import { resolve } from "node:path"

/** How a value is written: read from text (or why not), and shown back. */
export interface Value<A> {
  /** How help names the value: `DURATION`, `N`, `URL`; empty for an on/off flag. */
  readonly pseudo: string
  /** On/off: the flag alone turns it on. */
  readonly toggle: boolean
  readonly read: (text: string) => Either.Either<A, string>
  readonly show: (value: A) => string
}

const value = <A>(pseudo: string, read: Value<A>["read"], show: Value<A>["show"]): Value<A> => ({
  pseudo,
  toggle: false,
  read,
  show
})

/** Whether `text` says none: empty, or the word `none`. */
export const saysNone = (text: string, word = "none") => text.trim() === "" || text.trim() === word

/** `value` or nothing: none is shown as `shownNone`, and read from it or from an empty text. */
export const optional = <A>(inner: Value<A>, shownNone = "none"): Value<A | undefined> => ({
  pseudo: inner.pseudo,
  toggle: false,
  read: (text) => (saysNone(text, shownNone) ? Either.right(undefined) : inner.read(text)),
  show: (v) => (v === undefined ? shownNone : inner.show(v))
})

const units = [["d", 86_400_000], ["h", 3_600_000], ["m", 60_000], ["s", 1_000]] as const

/** A duration in the largest unit that divides it: `30s`, `2m`, `7d`, `250ms`. */
export const showDuration = (input: Duration.DurationInput): string => {
  const ms = Duration.toMillis(Duration.decode(input))
  const unit = units.find(([, size]) => ms > 0 && ms % size === 0)
  return unit === undefined ? `${ms}ms` : `${ms / unit[1]}${unit[0]}`
}

const durationForms = "a whole number and ms, s, m, h or d"

/** A duration; with `positive`, zero is refused. */
export const duration = (options: { readonly positive: boolean }): Value<Duration.Duration> =>
  value(
    "DURATION",
    (text) =>
      Option.match(
        Option.filter(AppexecConfig.parseDuration(text), (d) => !options.positive || Duration.toMillis(d) > 0),
        {
          onNone: () =>
            Either.left(
              `'${text}' is not a duration${
                options.positive ? " above zero" : ""
              } (${durationForms}, such as 30s or 7d)`
            ),
          onSome: Either.right
        }
      ),
    showDuration
  )

/** A duration above zero, or none. */
export const optionalDuration: Value<Duration.Duration | undefined> = optional(duration({ positive: true }))

/** Comma-separated durations (`5s,30s,2m`). */
export const durations: Value<ReadonlyArray<Duration.Duration>> = value(
  "LIST",
  (text) =>
    Option.match(AppexecConfig.parseDurations(text), {
      onNone: () => Either.left(`'${text}' is not a list of durations such as 5s,30s,2m (${durationForms})`),
      onSome: Either.right
    }),
  (list) => list.map(showDuration).join(",")
)

/** A whole number from `min` to `max`; `why` says what was wanted when the text is not one. */
const whole = (min: number, max: number, why: (text: string) => string): Value<number> =>
  value("N", (text) => {
    const n = /^\s*\d{1,15}\s*$/.test(text) ? Number(text) : Number.NaN
    return n >= min && n <= max ? Either.right(n) : Either.left(why(text))
  }, String)

/** A whole number of at least 1. */
export const count: Value<number> = whole(1, Number.MAX_SAFE_INTEGER, (t) => `'${t.trim()}' is not a positive number`)

/** A whole number of at least 1, or none. */
export const optionalCount: Value<number | undefined> = optional(count)

/** A whole number of at least 0, with its own words for anything else. */
export const natural = (why: (text: string) => string): Value<number> => whole(0, Number.MAX_SAFE_INTEGER, why)

/** A TCP port, 0 meaning any free one. */
export const port: Value<number> = whole(0, 65535, (t) => `'${t.trim()}' is not a port (0 to 65535)`)

/** A port, or none (off). */
export const optionalPort: Value<number | undefined> = optional(port, "off")

const yes = new Set(["true", "yes", "on", "1"])
const no = new Set(["false", "no", "off", "0"])

/** On or off: `true`/`false` (also `yes`/`no`, `on`/`off`, `1`/`0`). */
export const toggle: Value<boolean> = {
  pseudo: "",
  toggle: true,
  read: (text) => {
    const word = text.trim().toLowerCase()
    return yes.has(word)
      ? Either.right(true)
      : no.has(word)
      ? Either.right(false)
      : Either.left(`'${text}' is neither true nor false`)
  },
  show: (on) => (on ? "on" : "off")
}

/** Any text but an empty one. */
export const text = (pseudo: string): Value<string> =>
  value(pseudo, (t) => (t.trim() === "" ? Either.left("is empty") : Either.right(t.trim())), (t) => t)

/**
 * The name of a process (`--name`): up to 100 printable characters without spaces, or none
 * (`host:pid` then).
 */
export const processName: Value<string | undefined> = optional(
  value(
    "NAME",
    (t) =>
      /^[\x21-\x7e]{1,100}$/.test(t.trim())
        ? Either.right(t.trim())
        : Either.left(`'${t.trim()}' is not a name: up to 100 printable characters, no spaces`),
    (t) => t
  )
)

/** A directory or file, made absolute from the current directory. */
export const path = (pseudo: string): Value<string> =>
  value(pseudo, (t) => (t.trim() === "" ? Either.left("is empty") : Either.right(resolve(t.trim()))), (p) => p)

/** A path, or none. */
export const optionalPath = (pseudo: string): Value<string | undefined> => optional(path(pseudo))

/** An http(s) URL, or none; a trailing slash is dropped. */
export const url: Value<string | undefined> = optional(
  value(
    "URL",
    (t) =>
      /^https?:\/\/[^/]/.test(t.trim())
        ? Either.right(t.trim().replace(/\/+$/, ""))
        : Either.left(`'${t}' is not an http(s) URL`),
    (u) => u
  )
)

const byteUnits = { "": 1, kib: 1024, mib: 1024 ** 2, gib: 1024 ** 3 } as const

/** A size in the largest binary unit that divides it: `25MiB`, `512KiB`, `100`. */
export const showBytes = (bytes: number): string => {
  const unit = (["gib", "mib", "kib"] as const).find((u) => bytes % byteUnits[u] === 0)
  return unit === undefined ? String(bytes) : `${bytes / byteUnits[unit]}${unit.slice(0, 1).toUpperCase()}iB`
}

/** A size in bytes of at least 1: a whole number, alone or followed by `KiB`, `MiB` or `GiB` (`25MiB`). */
export const bytes: Value<number> = value("SIZE", (t) => {
  const m = /^\s*(\d{1,15})\s*(kib|mib|gib)?\s*$/i.exec(t)
  const unit = m?.[2]?.toLowerCase()
  const size = m === null
    ? 0
    : Number(m[1]) * (unit === "kib" || unit === "mib" || unit === "gib" ? byteUnits[unit] : 1)
  return size >= 1 && Number.isSafeInteger(size)
    ? Either.right(size)
    : Either.left(`'${t}' is not a size above zero (bytes, or a whole number of KiB, MiB or GiB, such as 25MiB)`)
}, showBytes)

/** Comma-separated items each `item` reads (empty items dropped). */
export const list = <A>(pseudo: string, item: (text: string) => Either.Either<A, string>, show: (a: A) => string) =>
  value<ReadonlyArray<A>>(
    pseudo,
    (t) =>
      saysNone(t) ? Either.right([]) : Either.all(t.split(",").map((i) => i.trim()).filter((i) => i !== "").map(item)),
    (items) => (items.length === 0 ? "none" : items.map(show).join(","))
  )

/** A URL with the password of its user info replaced by `…`. */
export const hidePassword = (url: string) => url.replace(/\/\/([^:@/]*):[^@/]*@/, "//$1:…@")

/** A PostgreSQL URL, or none; shown without its password. */
export const postgresUrl: Value<string | undefined> = optional(
  value(
    "URL",
    (t) =>
      PostgresClient.isPostgresUrl(t.trim())
        ? Either.right(t.trim())
        : Either.left(`'${hidePassword(t)}' is not a postgres:// or postgresql:// URL`),
    hidePassword
  )
)

/** A private Ed25519 JWK, checked, or none; never shown (a secret). */
export const privateJwk: Value<SigningKeys.PrivateJwk | undefined> = optional(
  value("JSON", (t) => {
    const invalid = (why: string) => Either.left(`not a private Ed25519 JWK (${why})`)
    const jwk = Schema.decodeUnknownEither(Schema.parseJson(SigningKeys.PrivateJwk))(t)
    if (Either.isLeft(jwk)) return invalid("expected JSON with kty OKP, crv Ed25519 and d")
    const usable = SigningKeys.fromPrivateJwk(jwk.right)
    return Either.isLeft(usable) ? invalid(usable.left) : Either.right(jwk.right)
  }, (jwk) => JSON.stringify(jwk))
)
