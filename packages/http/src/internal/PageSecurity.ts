/**
 * The security headers of the pages appexec serves (the console, the API reference at `/docs`):
 * the page's own `Content-Security-Policy` (each says `frame-ancestors 'none'`, so no other site
 * frames it), `X-Content-Type-Options: nosniff` and `Referrer-Policy: no-referrer`.
 */

/** The headers of a page whose policy is `contentSecurityPolicy`. */
export const headers = (contentSecurityPolicy: string): Readonly<Record<string, string>> => ({
  "content-security-policy": contentSecurityPolicy,
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer"
})
