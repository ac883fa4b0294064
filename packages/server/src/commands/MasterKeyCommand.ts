/**
 * `appexec master-key reseal` (docs/secrets.md#changing-the-master-key): the second phase of a
 * change of master key. Run with the new key in `APPEXEC_MASTER_KEY` and the old one in
 * `APPEXEC_MASTER_KEY_PREVIOUS`, its start seals again with the new key every secret and signing
 * key the old one sealed (as every process's start does); it then says, for each kind, how many
 * values each key opens, and whether the previous keys may be dropped: they may when no value is
 * sealed with one any more. It exits non-zero while some value still is (a process that still
 * seals with the old key wrote it meanwhile: run it again once every process has restarted).
 */
import { MasterKeySurvey } from "@appexec/core"
import { Command } from "@effect/cli"
import { Console, Effect } from "effect"
import { admin, CommandFailed, store } from "./AdminCommands.js"

const standingText: Readonly<Record<MasterKeySurvey.Standing, string>> = {
  current: "sealed with the current master key",
  previous: "sealed with a previous master key",
  next: "sealed with a next master key",
  clear: "stored in the clear",
  unreadable: "opened by no master key given"
}

/** One line per kind of value: how many stand each way. */
const summary = (values: ReadonlyArray<MasterKeySurvey.SurveyedValue>, kind: MasterKeySurvey.SurveyedValue["kind"]) => {
  const ofKind = values.filter((v) => v.kind === kind)
  const counts = (Object.keys(standingText) as Array<MasterKeySurvey.Standing>)
    .map((standing) => [standing, ofKind.filter((v) => v.standing === standing).length] as const)
    .filter(([, count]) => count > 0)
    .map(([standing, count]) => `${count} ${standingText[standing]}`)
  return `${kind}s: ${counts.length === 0 ? "none" : counts.join(", ")}`
}

const reseal = Command.make(
  "reseal",
  { store },
  ({ store }) =>
    admin(
      store,
      Effect.gen(function*() {
        // The instance's start has sealed again what a previous key sealed (SecretStore, SigningKeys).
        const values = yield* MasterKeySurvey.survey
        yield* Console.log(summary(values, "secret"))
        yield* Console.log(summary(values, "signing key"))
        for (const value of values.filter((v) => v.standing === "unreadable")) {
          yield* Console.log(`${value.kind} ${value.name}: ${standingText.unreadable}`)
        }
        const stale = values.filter((v) => v.standing === "previous")
        if (stale.length > 0) {
          return yield* new CommandFailed({
            message: `${stale.length} value(s) are still sealed with a previous master key ` +
              `(${stale.map((v) => `${v.kind} ${v.name}`).join(", ")}): a process that seals with the old key ` +
              "wrote them; restart every process with the new key, then run appexec master-key reseal again"
          })
        }
        yield* Console.log(
          "no value is sealed with a previous master key: APPEXEC_MASTER_KEY_PREVIOUS may be dropped"
        )
      })
    )
).pipe(
  Command.withDescription(
    "Seal again with the current master key what a previous one sealed, and say whether the previous keys may be dropped"
  )
)

/** `appexec master-key …`. */
export const masterKey = Command.make("master-key").pipe(
  Command.withDescription("The master key that seals secrets and signing keys (docs/secrets.md)"),
  Command.withSubcommands([reseal])
)
