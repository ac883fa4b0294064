/**
 * Bytes read in chunks made one: the request bodies the HTTP edge and the client read, the
 * events the event stream writes at once. Plain code, no Effect, so the client can import it.
 */

/** `chunks` copied one after another into one array of their own; `size` is their total length, when counted already. */
export const concat = (chunks: Iterable<Uint8Array>, size?: number): Uint8Array => {
  const all = Array.from(chunks)
  const whole = new Uint8Array(size ?? all.reduce((total, chunk) => total + chunk.byteLength, 0))
  let at = 0
  for (const chunk of all) {
    whole.set(chunk, at)
    at += chunk.byteLength
  }
  return whole
}
