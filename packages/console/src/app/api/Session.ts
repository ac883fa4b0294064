/**
 * The API key of the signed-in person, kept in the tab's session storage: it lasts while the tab
 * does, is not shared with other tabs, and never goes into a URL. A browser that refuses storage
 * (a private mode, a policy) keeps the key in the page only.
 */

const STORAGE_KEY = "appexec.console.apiKey"

/** The kept key, or null. */
export const readKey = (): string | null => {
  try {
    return sessionStorage.getItem(STORAGE_KEY)
  } catch {
    return null
  }
}

/** Keeps `key` for the session. */
export const saveKey = (key: string): void => {
  try {
    sessionStorage.setItem(STORAGE_KEY, key)
  } catch {
    // The page keeps it in memory; a reload signs out.
  }
}

/** Forgets the key. */
export const clearKey = (): void => {
  try {
    sessionStorage.removeItem(STORAGE_KEY)
  } catch {
    // Nothing was kept.
  }
}

/** A hint of a key that tells keys apart without showing them: its prefix and last four characters. */
export const keyHint = (key: string): string => {
  const underscore = key.indexOf("_")
  const prefix = underscore >= 0 && underscore < 8 ? key.slice(0, underscore + 1) : ""
  return key.length <= prefix.length + 8
    ? `${prefix}…`
    : `${prefix}${key.slice(prefix.length, prefix.length + 4)}…${key.slice(-4)}`
}
