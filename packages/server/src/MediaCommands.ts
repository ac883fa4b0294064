/**
 * `appexec media …` (docs/cli.md#appexec-media, docs/media.md#moving-media-to-a-bucket): the
 * stores a deployment keeps media in, and the two chores around them.
 * - `migrate --to s3://…` moves every blob of the other stores (the default one, buckets used
 *   before) into the bucket, resumable: run again, it goes on where it stopped. A bucket left
 *   empty is forgotten. Old URLs keep their keys, so they answer from the bucket afterwards.
 * - `sweep` deletes the blobs nothing refers to (left by an older `prune`), never one written
 *   less than `--min-age` ago; `--dry-run` only says what it would delete.
 * - `stores` lists the stores; `forget` drops a recorded bucket that is gone.
 * Each prints its result on stdout, a line per blob then a summary, tab-separated.
 */
import { CombinedBlobStore, MediaMove, MediaStoreRegistry, MediaSweep } from "@appexec/core"
import { Args, Command, Options } from "@effect/cli"
import { Config, Console, Effect, Either, Option, Stream } from "effect"
import { CommandFailed } from "./AdminCommands.js"
import type * as Database from "./Database.js"
import * as Instance from "./Instance.js"
import * as Flags from "./internal/Flags.js"
import * as SharedFlags from "./internal/SharedFlags.js"
import * as MediaStorage from "./MediaStorage.js"
import { DEFAULT_ID } from "./MediaStores.js"

const { data, database } = SharedFlags

/** How a member is named to the operator: a bucket by its id, the default store by where it is. */
const nameOf = (member: CombinedBlobStore.Member, dataDir: string, db: Database.Database) =>
  member.id !== DEFAULT_ID
    ? member.id
    : Option.isSome(db)
    ? "the database"
    : Instance.mediaDirectory(dataDir)

const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`

/** A member that cannot list its blobs stops the command with a message naming it. */
const listable = (member: CombinedBlobStore.Member, name: string) =>
  MediaSweep.canSweep(member.store)
    ? Effect.succeed(member.store)
    : Effect.fail(new CommandFailed({ message: `${name} cannot list its media (a store without list and deleteKeys)` }))

/** `--to s3://BUCKET/PREFIX` (else `APPEXEC_MEDIA`). */
const to = Options.text("to").pipe(
  Options.withPseudoName("s3://BUCKET/PREFIX"),
  Options.withDescription("The bucket to move media into (else APPEXEC_MEDIA): the --media of serve and worker"),
  Options.withFallbackConfig(Config.string("APPEXEC_MEDIA")),
  Options.mapEffect((text) =>
    Either.match(MediaStorage.parseLocation(text), {
      onLeft: (why) => Flags.refuse("to", why),
      onRight: (found) => Effect.succeed(Option.some(found))
    })
  )
)

const migrate = Command.make(
  "migrate",
  {
    data,
    database,
    to,
    mediaEndpoint: MediaStorage.endpoint,
    keep: Options.boolean("keep").pipe(
      Options.withDescription("Copy only: leave every medium in the store it is in as well")
    )
  },
  ({ data, database, to, mediaEndpoint, keep }) =>
    Effect.gen(function*() {
      const media = yield* MediaStorage.fromFlags({ media: to, mediaEndpoint })
      yield* Effect.gen(function*() {
        const members = yield* CombinedBlobStore.Members
        const registry = yield* MediaStoreRegistry.MediaStoreRegistry
        const target = members.primary
        for (const source of yield* members.others) {
          const name = nameOf(source, data, database)
          const store = yield* listable(source, name)
          const counts = { copied: 0, bytes: 0, present: 0, gone: 0 }
          // Eight at a time: each medium is a few requests to the bucket, mostly waiting.
          yield* MediaMove.move(store, target.store, { keep, concurrency: 8 }).pipe(
            Stream.runForEach((moved) =>
              MediaMove.Moved.$match(moved, {
                Copied: ({ key, size }) => {
                  counts.copied++
                  counts.bytes += size
                  return Console.log(`copied\t${key}\t${size}`)
                },
                Present: () => Effect.sync(() => void counts.present++),
                Gone: () => Effect.sync(() => void counts.gone++)
              })
            )
          )
          yield* Console.log(
            `${name} -> ${target.id}: ${plural(counts.copied, "medium", "media")} copied (${
              plural(counts.bytes, "byte")
            }), ${counts.present} already there, ${counts.gone} deleted meanwhile${
              keep ? "; kept where they were" : ""
            }`
          )
          // A bucket emptied by the move is forgotten: no process reads it or deletes from it any more.
          if (!keep && source.id !== DEFAULT_ID && (yield* Stream.runHead(store.list(""))).pipe(Option.isNone)) {
            if (yield* registry.remove(source.id)) yield* Console.log(`forgot ${source.id}: it is empty`)
          }
        }
      }).pipe(Effect.provide(Instance.layer({ dataDir: data, database, background: false, media })))
    })
).pipe(
  Command.withDescription(
    "Move every medium of the other stores (the data directory or the database, buckets used before) into the bucket --to; run again to go on where it stopped"
  )
)

const minAge = Options.text("min-age").pipe(
  Options.withPseudoName("DURATION"),
  Options.withDescription("Never delete what was written less than this long ago (default 1h)"),
  Options.withDefault("1h"),
  Options.mapEffect((text) => Flags.durationOf("min-age", text, false))
)

const sweep = Command.make(
  "sweep",
  {
    data,
    database,
    dryRun: Options.boolean("dry-run").pipe(Options.withDescription("Say what would be deleted; delete nothing")),
    minAge
  },
  ({ data, database, dryRun, minAge }) =>
    Effect.gen(function*() {
      const members = yield* CombinedBlobStore.Members
      for (const member of [members.primary, ...(yield* members.others)]) {
        const name = nameOf(member, data, database)
        const store = yield* listable(member, name)
        const counts = { orphans: 0, bytes: 0, fresh: 0, unknown: 0 }
        yield* MediaSweep.sweep(store, { minAge, dryRun }).pipe(
          Stream.runForEach((finding) =>
            MediaSweep.Finding.$match(finding, {
              Orphan: ({ entry, why }) => {
                counts.orphans++
                counts.bytes += entry.size
                return Console.log(`${dryRun ? "would delete" : "deleted"}\t${entry.key}\t${entry.size}\t${why}`)
              },
              Fresh: ({ entry, why }) => {
                counts.fresh++
                return Console.log(`kept (recent)\t${entry.key}\t${entry.size}\t${why}`)
              },
              Unknown: () => Effect.sync(() => void counts.unknown++)
            })
          )
        )
        yield* Console.log(
          `${name}: ${plural(counts.orphans, "orphan")} (${plural(counts.bytes, "byte")}) ${
            dryRun ? "to delete" : "deleted"
          }, ${counts.fresh} written within ${Flags.showDuration(minAge)} kept, ${
            plural(counts.unknown, "key")
          } appexec does not make left alone`
        )
      }
    }).pipe(Effect.provide(Instance.layer({ dataDir: data, database, background: false })))
).pipe(
  Command.withDescription(
    "Delete media no execution or live upload refers to (left by an older prune), in every store; --dry-run says what it would delete"
  )
)

const stores = Command.make("stores", { data, database }, ({ data, database }) =>
  Effect.gen(function*() {
    const members = yield* CombinedBlobStore.Members
    const registry = yield* MediaStoreRegistry.MediaStoreRegistry
    yield* Console.log(`default\t${nameOf(members.primary, data, database)}`)
    for (const location of yield* registry.list) {
      yield* Console.log(`${location.id}\tadded ${new Date(location.addedAt).toISOString()}\tregion ${location.region}`)
    }
  }).pipe(Effect.provide(Instance.layer({ dataDir: data, database, background: false })))).pipe(
    Command.withDescription(
      "List the stores media are read from: the default one, then each bucket a process recorded (id, added, region)"
    )
  )

const forget = Command.make(
  "forget",
  {
    data,
    database,
    store: Args.text({ name: "STORE" }).pipe(
      Args.withDescription("A recorded bucket, as `appexec media stores` names it")
    )
  },
  ({ data, database, store }) =>
    Effect.gen(function*() {
      const registry = yield* MediaStoreRegistry.MediaStoreRegistry
      if (!(yield* registry.remove(store))) {
        return yield* new CommandFailed({
          message: `No recorded media store is named '${store}' (\`appexec media stores\` lists them).`
        })
      }
      yield* Console.log(`forgot ${store}`)
    }).pipe(Effect.provide(Instance.layer({ dataDir: data, database, background: false })))
).pipe(
  Command.withDescription(
    "Stop reading a recorded bucket and deleting from it (one that is gone); its media stay where they are"
  )
)

/** `appexec media …`. */
export const media = Command.make("media").pipe(
  Command.withDescription("Media stores: move media into a bucket, sweep orphans, list and forget stores"),
  Command.withSubcommands([migrate, sweep, stores, forget])
)
