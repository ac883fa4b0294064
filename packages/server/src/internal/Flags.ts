/**
 * How the `appexec` command's flags are made (docs/cli.md). Every flag falls back to its
 * `APPEXEC_*` variable, then to its default; a default is taken from the module that owns the
 * setting (`AppexecConfig.defaults` for the engine's, `RateLimit.defaults`, the listener's
 * `connectionDefaults`), never written again here, and help shows it. Every duration, of a flag
 * or of a variable, is read by core's one parser (`AppexecConfig.parseDuration`): `500ms`, `30s`,
 * `2m`, `12h`, `7d`.
 */
import { AppexecConfig } from "@appexec/core"
import { HelpDoc, Options, ValidationError } from "@effect/cli"
import { Config, Duration, Effect, Option } from "effect"

/** What names a flag: `--name`, its `APPEXEC_*` variable, and what it is for (shown in help). */
export interface Flag {
  readonly name: string
  readonly variable: string
  readonly description: string
}

/** A value of `--name` refused, with why. */
export const refuse = (name: string, why: string): Effect.Effect<never, ValidationError.ValidationError> =>
  Effect.fail(ValidationError.invalidValue(HelpDoc.p(`--${name}: ${why}`)))

const units = [["d", 86_400_000], ["h", 3_600_000], ["m", 60_000], ["s", 1_000]] as const

/** A duration as the flags write it, in the largest unit that divides it: `30s`, `2m`, `7d`, `250ms`. */
export const showDuration = (input: Duration.DurationInput): string => {
  const ms = Duration.toMillis(Duration.decode(input))
  const unit = units.find(([, size]) => ms > 0 && ms % size === 0)
  return unit === undefined ? `${ms}ms` : `${ms / unit[1]}${unit[0]}`
}

const durationForms = "a whole number and ms, s, m, h or d"

/** `text` read as one duration by core's parser; with `positive`, zero is refused too. */
export const durationOf = (name: string, text: string, positive: boolean) =>
  Option.match(Option.filter(AppexecConfig.parseDuration(text), (d) => !positive || Duration.toMillis(d) > 0), {
    onNone: () =>
      refuse(name, `'${text}' is not a duration${positive ? " above zero" : ""} (${durationForms}, such as 30s or 7d)`),
    onSome: (duration) => Effect.succeed(duration)
  })

const byteUnits = { "": 1, kib: 1024, mib: 1024 ** 2, gib: 1024 ** 3 } as const

/** A size as the flags write it, in the largest binary unit that divides it: `25MiB`, `512KiB`, `100`. */
export const showBytes = (bytes: number): string => {
  const unit = (["gib", "mib", "kib"] as const).find((u) => bytes % byteUnits[u] === 0)
  return unit === undefined ? String(bytes) : `${bytes / byteUnits[unit]}${unit.slice(0, 1).toUpperCase()}iB`
}

/** A size in bytes of at least 1: a whole number, alone or followed by `KiB`, `MiB` or `GiB` (`25MiB`). */
export const byteSize = (flag: Flag, fallback: number): Options.Options<number> =>
  Options.text(flag.name).pipe(
    Options.withPseudoName("SIZE"),
    Options.withDescription(`${flag.description} (default ${showBytes(fallback)})`),
    Options.withFallbackConfig(Config.string(flag.variable)),
    Options.mapEffect((text) => {
      const m = /^\s*(\d{1,15})\s*(kib|mib|gib)?\s*$/i.exec(text)
      const bytes = m === null ? 0 : Number(m[1]) * byteUnits[(m[2]?.toLowerCase() ?? "") as keyof typeof byteUnits]
      return bytes >= 1 && Number.isSafeInteger(bytes)
        ? Effect.succeed(bytes)
        : refuse(
          flag.name,
          `'${text}' is not a size above zero (bytes, or a whole number of KiB, MiB or GiB, such as 25MiB)`
        )
    }),
    Options.withDefault(fallback)
  )

/** A whole-number flag of at least 1, with its default. */
export const count = (flag: Flag, fallback: number): Options.Options<number> =>
  Options.integer(flag.name).pipe(
    Options.withPseudoName("N"),
    Options.withDescription(`${flag.description} (default ${fallback})`),
    Options.withFallbackConfig(Config.integer(flag.variable)),
    Options.mapEffect((n) => n >= 1 ? Effect.succeed(n) : refuse(flag.name, `${n} is not a positive number`)),
    Options.withDefault(fallback)
  )

/** A whole-number flag of at least 1 that has no default: none, no cap. */
export const optionalCount = (flag: Flag): Options.Options<Option.Option<number>> =>
  Options.integer(flag.name).pipe(
    Options.withPseudoName("N"),
    Options.withDescription(flag.description),
    Options.withFallbackConfig(Config.integer(flag.variable)),
    Options.optional,
    Options.mapEffect((n) =>
      Option.isSome(n) && n.value < 1 ? refuse(flag.name, `${n.value} is not a positive number`) : Effect.succeed(n)
    )
  )

/** A duration flag with its default; with `positive`, zero is refused. */
export const duration = (
  flag: Flag,
  fallback: Duration.DurationInput,
  options: { readonly positive: boolean }
): Options.Options<Duration.Duration> =>
  Options.text(flag.name).pipe(
    Options.withPseudoName("DURATION"),
    Options.withDescription(`${flag.description} (default ${showDuration(fallback)})`),
    Options.withFallbackConfig(Config.string(flag.variable)),
    Options.mapEffect((text) => durationOf(flag.name, text, options.positive)),
    Options.withDefault(Duration.decode(fallback))
  )

/** A duration flag above zero that has no default. */
export const optionalDuration = (flag: Flag): Options.Options<Option.Option<Duration.Duration>> =>
  Options.text(flag.name).pipe(
    Options.withPseudoName("DURATION"),
    Options.withDescription(flag.description),
    Options.withFallbackConfig(Config.string(flag.variable)),
    Options.optional,
    Options.mapEffect((text) =>
      Option.isNone(text) ? Effect.succeedNone : Effect.asSome(durationOf(flag.name, text.value, true))
    )
  )

/** A comma-separated list of durations (`5s,30s,2m`), with its default. */
export const durations = (
  flag: Flag,
  fallback: ReadonlyArray<Duration.DurationInput>
): Options.Options<ReadonlyArray<Duration.Duration>> =>
  Options.text(flag.name).pipe(
    Options.withPseudoName("LIST"),
    Options.withDescription(`${flag.description} (default ${fallback.map(showDuration).join(",")})`),
    Options.withFallbackConfig(Config.string(flag.variable)),
    Options.mapEffect((text) =>
      Option.match(AppexecConfig.parseDurations(text), {
        onNone: () => refuse(flag.name, `'${text}' is not a list of durations such as 5s,30s,2m (${durationForms})`),
        onSome: (list) => Effect.succeed(list)
      })
    ),
    Options.withDefault(fallback.map((d) => Duration.decode(d)))
  )

/** An optional http(s) URL flag; a trailing slash is dropped. */
export const url = (flag: Flag): Options.Options<Option.Option<string>> =>
  Options.text(flag.name).pipe(
    Options.withPseudoName("URL"),
    Options.withDescription(flag.description),
    Options.withFallbackConfig(Config.string(flag.variable)),
    Options.optional,
    Options.mapEffect((value) =>
      Option.isSome(value) && !/^https?:\/\/[^/]/.test(value.value)
        ? refuse(flag.name, `'${value.value}' is not an http(s) URL`)
        : Effect.succeed(Option.map(value, (u) => u.replace(/\/+$/, "")))
    )
  )

/** An on/off flag, off unless given (or its variable is true). */
export const toggle = (flag: Flag): Options.Options<boolean> =>
  Options.boolean(flag.name).pipe(
    Options.withDescription(flag.description),
    Options.withFallbackConfig(Config.boolean(flag.variable))
  )
