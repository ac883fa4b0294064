/**
 * One `BlobStore` over the media stores of a deployment (docs/media.md, *Moving media*): new
 * blobs go to the primary store; a read looks in the primary first, then in each other store
 * (`Members.others`, asked again at every miss, so that a store recorded by another process since
 * this one started is found); deleting a prefix deletes it in every store. So a URL handed out
 * before media moved to a bucket still answers from the store that holds its blob, a process not
 * yet given the bucket answers what the others put there, and retention deletes a blob wherever
 * it is. The store where a key was last found is remembered (the last 1,000 keys), so that the
 * `stat` and ranges of one download look in one store, not in each.
 */
import { Context, Effect, Layer, Option } from "effect"
import * as BlobStore from "./BlobStore.js"
import type { StorageError } from "./Errors.js"

/** A store of the combination and what names it (in logs, and to `appexec media` commands). */
export interface Member {
  readonly id: string
  readonly store: BlobStore.BlobStore["Type"]
}

/** The stores to combine. */
export class Members extends Context.Tag("@appexec/core/CombinedBlobStore/Members")<
  Members,
  {
    /** Where new blobs go, and the first place a read looks. */
    readonly primary: Member
    /** The other stores, in the order reads look in them; evaluated afresh at each miss and each delete. */
    readonly others: Effect.Effect<ReadonlyArray<Member>, StorageError>
  }
>() {}

/** How many keys the combination remembers the store of. */
const REMEMBERED = 1000

/** The combined store over `members`. */
export const make = (members: Members["Type"]): BlobStore.BlobStore["Type"] => {
  const { primary } = members
  // Insertion order is recency: a key found again moves to the end, the oldest goes first.
  const foundIn = new Map<string, Member>()
  const remember = (key: string, member: Member) => {
    foundIn.delete(key)
    foundIn.set(key, member)
    if (foundIn.size > REMEMBERED) foundIn.delete(foundIn.keys().next().value!)
  }

  /** The first answer of `read` that is some: the remembered store, the primary, then the others. */
  const lookUp = <A>(
    key: string,
    read: (store: BlobStore.BlobStore["Type"]) => Effect.Effect<Option.Option<A>, StorageError>
  ): Effect.Effect<Option.Option<A>, StorageError> =>
    Effect.gen(function*() {
      const tried = new Set<string>()
      const attempt = (member: Member) => {
        tried.add(member.id)
        return Effect.tap(read(member.store), (answer) => Option.isSome(answer) ? remember(key, member) : undefined)
      }
      const remembered = foundIn.get(key)
      if (remembered !== undefined) {
        const answer = yield* attempt(remembered)
        if (Option.isSome(answer)) return answer
      }
      if (!tried.has(primary.id)) {
        const answer = yield* attempt(primary)
        if (Option.isSome(answer)) return answer
      }
      for (const member of yield* members.others) {
        if (tried.has(member.id)) continue
        const answer = yield* attempt(member)
        if (Option.isSome(answer)) return answer
      }
      foundIn.delete(key)
      return Option.none()
    })

  return {
    put: (key, blob) => Effect.tap(primary.store.put(key, blob), () => remember(key, primary)),
    get: (key) => lookUp(key, (store) => store.get(key)),
    stat: (key) => lookUp(key, (store) => BlobStore.stat(store, key)),
    getRange: (key, start, endInclusive) => lookUp(key, (store) => BlobStore.getRange(store, key, start, endInclusive)),
    deleteUnder: (prefix) =>
      Effect.gen(function*() {
        for (const key of [...foundIn.keys()]) if (key.startsWith(prefix)) foundIn.delete(key)
        yield* primary.store.deleteUnder(prefix)
        for (const member of yield* members.others) {
          if (member.id !== primary.id) yield* member.store.deleteUnder(prefix)
        }
      })
  }
}

/** The combined `BlobStore` over the `Members` of the context. */
export const layer: Layer.Layer<BlobStore.BlobStore, never, Members> = Layer.effect(
  BlobStore.BlobStore,
  Effect.map(Members, make)
)
