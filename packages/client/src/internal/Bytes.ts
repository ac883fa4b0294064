/** `chunks`, `size` bytes in all, copied into one array of their own. */
export const concat = (chunks: Iterable<Uint8Array>, size: number): Uint8Array => {
  const whole = new Uint8Array(size)
  let at = 0
  for (const chunk of chunks) {
    whole.set(chunk, at)
    at += chunk.byteLength
  }
  return whole
}
