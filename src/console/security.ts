import type { Context as HonoContext, MiddlewareHandler } from "hono";
import { getCookie, setCookie, deleteCookie } from "hono/cookie";
import { MmError } from "../errors.js";

export const SESSION_COOKIE = "mm_console";
/** The cookie is sent only to the console's own paths. */
const COOKIE_PATH = "/console";

/**
 * The console's Content-Security-Policy: scripts, styles, images and fetches only from the
 * server itself (files served from the package, never inline, never a CDN); no plugins, no
 * framing, no <base>, forms post only back here.
 */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "object-src 'none'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "form-action 'self'",
].join("; ");

/** Headers on every console response: the CSP and its companions. Pages are never cached (they hold account data). */
export const securityHeaders: MiddlewareHandler = async (c, next) => {
  await next();
  const h = c.res.headers;
  h.set("Content-Security-Policy", CONTENT_SECURITY_POLICY);
  h.set("X-Content-Type-Options", "nosniff");
  h.set("X-Frame-Options", "DENY");
  // same-origin, not no-referrer: with no-referrer, Chromium sends `Origin: null` on the console's own
  // form posts, and the origin check would refuse them. Other sites still get no referrer.
  h.set("Referrer-Policy", "same-origin");
  h.set("Cross-Origin-Opener-Policy", "same-origin");
  h.set("Cross-Origin-Resource-Policy", "same-origin");
  if (!h.has("Cache-Control")) h.set("Cache-Control", "no-store");
};

/** HTTPS directly, or behind a proxy that says so (a false claim only makes the cookie unusable to its sender). */
export function isHttps(c: HonoContext): boolean {
  return new URL(c.req.url).protocol === "https:" || c.req.header("X-Forwarded-Proto")?.split(",")[0].trim() === "https";
}

/** The origin this request was sent to, as a browser would write it in `Origin`. */
export function ownOrigin(c: HonoContext): string {
  const url = new URL(c.req.url);
  return `${isHttps(c) ? "https:" : url.protocol}//${url.host}`;
}

export function readSessionCookie(c: HonoContext): string | undefined {
  return getCookie(c, SESSION_COOKIE);
}

/** Max-Age, not Expires: the session's length by the server's clock, whatever the browser's clock says. */
export function setSessionCookie(c: HonoContext, secret: string, maxAgeSeconds: number): void {
  setCookie(c, SESSION_COOKIE, secret, {
    path: COOKIE_PATH,
    httpOnly: true,
    sameSite: "Strict",
    secure: isHttps(c),
    maxAge: Math.max(1, Math.floor(maxAgeSeconds)),
  });
}

export function clearSessionCookie(c: HonoContext): void {
  deleteCookie(c, SESSION_COOKIE, { path: COOKIE_PATH, httpOnly: true, sameSite: "Strict", secure: isHttps(c) });
}

/**
 * The request-origin half of CSRF protection, for every state-changing request: a browser sends
 * `Origin` on every POST and `Sec-Fetch-Site` on every request; each that is present must say the
 * request comes from this very origin. A request with neither isn't from a browser page, so it
 * can't be a forgery riding on a victim's cookie. (The other half is the per-session token.)
 */
export function assertSameOrigin(c: HonoContext): void {
  const site = c.req.header("Sec-Fetch-Site");
  const origin = c.req.header("Origin");
  if (site !== undefined && site !== "same-origin") throw forbidden(`came from another site (Sec-Fetch-Site: ${site})`);
  if (origin !== undefined && origin !== ownOrigin(c)) throw forbidden("came from another origin");
}

/**
 * For requests that spend the account's quota or rate (every read of its data): from this origin,
 * or typed, bookmarked or opened by `mm console` (`Sec-Fetch-Site: none`). SameSite=Strict counts
 * every port of a host as one site, so without this an `<img>` on `127.0.0.1:OTHER` would spend
 * the owner's operations with the owner's cookie. Where a browser sends no Sec-Fetch-Site,
 * `Origin` (when present) must be this origin. Pages that spend nothing (keys, usage) still open
 * from a link on another site.
 */
export function assertMaySpend(c: HonoContext): void {
  const site = c.req.header("Sec-Fetch-Site");
  if (site !== undefined) {
    if (site !== "same-origin" && site !== "none") throw forbidden(`came from another site (Sec-Fetch-Site: ${site}) and would spend your quota; open the page from the console itself`);
    return;
  }
  const origin = c.req.header("Origin");
  if (origin !== undefined && origin !== ownOrigin(c)) throw forbidden("came from another origin and would spend your quota; open the page from the console itself");
}

export function forbidden(why: string): MmError {
  return new MmError("FORBIDDEN", `This request ${why}, so it was refused. Use the console's own pages.`);
}
