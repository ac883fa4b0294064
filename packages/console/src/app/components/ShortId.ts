/**
 * An id as a person tells ids apart on a page: its last eight characters. appexec's ids are
 * time-ordered (UUID version 7): their first characters are the time they were made, the same
 * for every id of the same minute or so; their last are random.
 */
export const shortId = (id: string): string => id.slice(-8)
