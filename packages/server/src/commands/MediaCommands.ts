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
import { Args, Command, HelpDoc, Options, ValidationError } from "@effect/cli"
import { Console, Effect, Either, Option, Stream } from "effect"
import * as Database from "../Database.js"
import * as Instance from "../Instance.js"
import * as MediaStorage from "../MediaStorage.js"
import { DEFAULT_ID } from "../MediaStores.js"
import * as Catalog from "../settings/Catalog.js"
import * as CliOptions from "../settings/CliOptions.js"
import type * as Resolve from "../settings/Resolve.js"
import * as SharedSettings from "../settings/SharedSettings.js"
import * as StoreSettings from "../settings/StoreSettings.js"
import * as Values from "../settings/Values.js"
import { admin, CommandFailed, store } from "./AdminCommands.js"

/** How a member is named to the operator: a bucket by its id, the default store by where it is. */
const nameOf = (member: CombinedBlobStore.Member, settings: Resolve.Resolved) =>
  member.id !== DEFAULT_ID
    ? Effect.succeed(member.id)
    : Effect.map(Database.fromSettings(settings), (db) =>
      Database.isPostgres(db) ? "the database" : Instance.mediaDirectory(settings.get(StoreSettings.data)))

const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`

/** A member that cannot list its blobs stops the command with a message naming it. */
const listable = (member: CombinedBlobStore.Member, name: string) =>
  MediaSweep.canSweep(member.store)
    ? Effect.succeed(member.store)
    : Effect.fail(new CommandFailed({ message: `${name} cannot list its media (a store without list and deleteKeys)` }))

const migrate = Command.make(
  "migrate",
  {
    // Where the state is, and the bucket: the setting `media` of serve and worker, as `--to`
    // (else APPEXEC_MEDIA, or `media` in the config file), with its `--media-endpoint`.
    settings: CliOptions.resolvedOf(Catalog.mediaMigrate, () => Either.right("admin"), {
      rename: { [SharedSettings.media.name]: "to" }
    }),
    keep: Options.boolean("keep").pipe(
      Options.withDescription("Copy only: leave every medium in the store it is in as well")
    )
  },
  ({ keep, settings }) =>
    Effect.gen(function*() {
      const to = settings.get(SharedSettings.media)
      if (to === undefined) {
        return yield* new CommandFailed({
          message: "Give the bucket to move media into: --to s3://BUCKET/PREFIX (or APPEXEC_MEDIA)."
        })
      }
      const media = yield* MediaStorage.fromSettings({
        media: to,
        mediaEndpoint: settings.get(SharedSettings.mediaEndpoint)
      })
      yield* admin(
        settings,
        Effect.gen(function*() {
          const members = yield* CombinedBlobStore.Members
          const registry = yield* MediaStoreRegistry.MediaStoreRegistry
          const target = members.primary
          for (const source of yield* members.others) {
            const name = yield* nameOf(source, settings)
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
        }),
        { media }
      )
    })
).pipe(
  Command.withDescription(
    "Move every medium of the other stores (the data directory or the database, buckets used before) into the bucket --to; run again to go on where it stopped"
  )
)

const minAgeValue = Values.duration({ positive: false })

const minAge = Options.text("min-age").pipe(
  Options.withPseudoName("DURATION"),
  Options.withDescription("Never delete what was written less than this long ago (default 1h)"),
  Options.withDefault("1h"),
  Options.mapEffect((text) =>
    Either.mapLeft(minAgeValue.read(text), (why) => ValidationError.invalidValue(HelpDoc.p(`--min-age: ${why}`)))
  )
)

const sweep = Command.make(
  "sweep",
  {
    settings: store,
    dryRun: Options.boolean("dry-run").pipe(Options.withDescription("Say what would be deleted; delete nothing")),
    minAge
  },
  ({ dryRun, minAge, settings }) =>
    admin(
      settings,
      Effect.gen(function*() {
        const members = yield* CombinedBlobStore.Members
        for (const member of [members.primary, ...(yield* members.others)]) {
          const name = yield* nameOf(member, settings)
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
            }, ${counts.fresh} written within ${Values.showDuration(minAge)} kept, ${
              plural(counts.unknown, "key")
            } appexec does not make left alone`
          )
        }
      })
    )
).pipe(
  Command.withDescription(
    "Delete media no execution or live upload refers to (left by an older prune), in every store; --dry-run says what it would delete"
  )
)

const stores = Command.make("stores", { store }, ({ store }) =>
  admin(
    store,
    Effect.gen(function*() {
      const members = yield* CombinedBlobStore.Members
      const registry = yield* MediaStoreRegistry.MediaStoreRegistry
      yield* Console.log(`default\t${yield* nameOf(members.primary, store)}`)
      for (const location of yield* registry.list) {
        yield* Console.log(
          `${location.id}\tadded ${new Date(location.addedAt).toISOString()}\tregion ${location.region}`
        )
      }
    })
  )).pipe(
    Command.withDescription(
      "List the stores media are read from: the default one, then each bucket a process recorded (id, added, region)"
    )
  )

const forget = Command.make(
  "forget",
  {
    settings: store,
    store: Args.text({ name: "STORE" }).pipe(
      Args.withDescription("A recorded bucket, as `appexec media stores` names it")
    )
  },
  ({ settings, store }) =>
    admin(
      settings,
      Effect.gen(function*() {
        const registry = yield* MediaStoreRegistry.MediaStoreRegistry
        if (!(yield* registry.remove(store))) {
          return yield* new CommandFailed({
            message: `No recorded media store is named '${store}' (\`appexec media stores\` lists them).`
          })
        }
        yield* Console.log(`forgot ${store}`)
      })
    )
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
