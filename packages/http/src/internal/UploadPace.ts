/**
 * The least pace of an upload's body (docs/http.md#request-bodies): a body that trickles holds its
 * place among the uploads read at once (`UploadSlots`) for as long as the request timeout allows,
 * and a client that reopens at once would hold the places for good. So once a body has been
 * arriving for one `window` (its grace), it is looked at every tenth of a window: when fewer than
 * `bytesPerSecond` × `window` bytes came in the last window, it is cut, answered `408`, and its
 * place given back. Time is Effect's `Clock`; the bytes are the adapter's count
 * (`ServerRequest.received`), so an adapter that does not count them is not checked.
 */
import { Duration, Effect } from "effect"
import * as ErrorAnswers from "./ErrorAnswers.js"
import type { ServerRequest } from "./Exchange.js"
import { Refused } from "./JsonBody.js"

/** The least pace. */
export interface MinimumPace {
  /** The least average rate over a window, in bytes per second; 0 checks nothing. */
  readonly bytesPerSecond: number
  /** The window the rate is averaged over, which is also the grace a body has before the first look. */
  readonly window: Duration.DurationInput
}

/** The default: 1 KiB/s averaged over 10 s, looked at every second after the first 10 s. */
export const defaults: MinimumPace = { bytesPerSecond: 1024, window: Duration.seconds(10) }

/** How many looks a window holds. */
const LOOKS = 10

/** 408 for a body cut for its pace. */
const tooSlow = (pace: { readonly bytesPerSecond: number; readonly seconds: number }) =>
  new Refused({
    response: ErrorAnswers.answer(408, {
      code: "invalid_request",
      message: `The upload arrived too slowly: less than ${pace.bytesPerSecond} bytes per second over ${
        Number(pace.seconds.toFixed(3))
      } s. Send it again at a steadier pace.`
    }, { connection: "close" })
  })

/**
 * `read` (the reading of `request`'s body), cut with a `408` refusal once its body arrives slower
 * than `pace`; as it is when the request has no count of bytes or the pace is 0.
 */
export const guard = <A, E, R>(
  read: Effect.Effect<A, E, R>,
  request: ServerRequest,
  pace: MinimumPace
): Effect.Effect<A, E | Refused, R> => {
  const received = request.received
  const window = Duration.decode(pace.window)
  if (received === undefined || !(pace.bytesPerSecond > 0) || !Duration.isFinite(window)) return read
  const seconds = Duration.toMillis(window) / 1000
  if (!(seconds > 0)) return read
  const least = pace.bytesPerSecond * seconds
  const look = Duration.millis(Duration.toMillis(window) / LOOKS)
  const refusal = tooSlow({ bytesPerSecond: pace.bytesPerSecond, seconds })
  const watch = Effect.gen(function*() {
    // The count at each look of the last window, oldest first.
    const counts = [received()]
    for (;;) {
      yield* Effect.sleep(look)
      counts.push(received())
      if (counts.length > LOOKS + 1) counts.shift()
      if (counts.length === LOOKS + 1 && counts[LOOKS]! - counts[0]! < least) return yield* Effect.fail(refusal)
    }
  })
  return Effect.raceFirst(read, watch)
}
