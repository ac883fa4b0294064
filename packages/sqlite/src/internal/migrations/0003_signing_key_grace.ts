/**
 * Migration 0003: a retired signing key remembers until when it stays published, so the grace
 * period of the rotation (`appexec signing-key rotate --grace`) holds for the server that
 * publishes the key set. Keys retired before keep the publisher's grace period (NULL).
 */
import { type Kysely, sql } from "kysely"

/** Adds `signing_keys.published_until`. */
export const up = async (db: Kysely<unknown>): Promise<void> => {
  await sql.raw(`ALTER TABLE signing_keys ADD COLUMN published_until INTEGER`).execute(db)
}
