import { Hono, type Context as HonoContext, type MiddlewareHandler } from "hono";
import { bodyLimit } from "hono/body-limit";
import { html } from "hono/html";
import type { Child } from "hono/jsx";
import { KEY_SHOWN_ONCE } from "../core/accounts.js";
import { ConsoleAccess, type ConsoleSession } from "../core/console-access.js";
import type { Context } from "../core/context.js";
import { errorDetail, forClient, MmError, toMmError } from "../errors.js";
import type { AppDeps } from "../http/app.js";
import { isQuotaExceeded } from "../limits/ledger.js";
import type { RouteInput } from "../http/routes.js";
import { ACTIONS, type ConsoleAction } from "./actions.js";
import { mountAssets } from "./assets.js";
import * as P from "./pages.js";
import { assertMaySpend, assertSameOrigin, clearSessionCookie, forbidden, readSessionCookie, securityHeaders, setSessionCookie } from "./security.js";

type Env = { Variables: { session: ConsoleSession; secret: string } };

/** Form bodies are a key name and a token or two. */
const FORM_LIMIT_BYTES = 16 * 1024;

/**
 * The management console (docs/console.md): server-rendered pages under /console for an account
 * owner signed in with a one-time link. Its reads go through the same route handlers and core
 * services as /v1, in the same rate-limit buckets and the same monthly quota (see actions.ts);
 * keys and usage are the account's own management and count nothing.
 */
export function mountConsole(app: Hono<any>, deps: AppDeps): void {
  // The open store: its documents, and so the Shared its replicas agree through (Redis with --redis).
  const access = new ConsoleAccess(deps.ctx.store, deps.ctx.clock);
  const con = new Hono<Env>();
  con.use("/console/*", securityHeaders);
  const asset = mountAssets(con);
  const chrome = (c: HonoContext<Env>, screen?: P.Screen): P.Chrome => {
    const session = c.get("session") as ConsoleSession | undefined;
    return { asset, account: session?.account, csrf: session?.csrf, screen };
  };
  const render = (c: HonoContext<Env>, node: Child, status = 200) => c.html(html`<!DOCTYPE html>${node}`, status as 200);
  const formLimit = bodyLimit({ maxSize: FORM_LIMIT_BYTES, onError: () => { throw new MmError("PAYLOAD_TOO_LARGE", "The form is larger than the console accepts."); } });

  /** Pages past sign-in: the session from the cookie, or a page saying how to sign in. */
  const signedIn: MiddlewareHandler<Env> = async (c, next) => {
    const secret = readSessionCookie(c);
    const session = await access.authenticate(secret);
    c.set("session", session);
    c.set("secret", secret!);
    await next();
  };

  /** State-changing requests: from this origin (Origin, Sec-Fetch-Site) and carrying the session's CSRF token. */
  const guarded = async (c: HonoContext<Env>): Promise<Record<string, string>> => {
    assertSameOrigin(c);
    const form = await formOf(c);
    if (!ConsoleAccess.csrfMatches(c.get("secret"), form.csrf)) throw forbidden("has no valid CSRF token (reload the page and try again)");
    return form;
  };

  /** Runs an action as the session's account, after its bucket's rate limit and one unit of quota, like its endpoint. */
  const perform = async <T,>(c: HonoContext<Env>, action: ConsoleAction<T>, input: Partial<RouteInput>): Promise<T> => {
    const { account } = c.get("session");
    assertMaySpend(c);
    const meter = deps.ledger.meter(account.id, account.quota, action.bucket);
    // As on /v1: a request refused for quota takes no rate allowance.
    await meter.check(1);
    const rate = await deps.limiter.take(`console:${account.id}`, action.bucket);
    c.header("X-RateLimit-Limit", String(rate.limit));
    c.header("X-RateLimit-Remaining", String(rate.remaining));
    c.header("X-RateLimit-Reset", String(rate.reset));
    if (!rate.allowed) throw new MmError("RATE_LIMIT_EXCEEDED", `Too many ${action.bucket} requests; retry in ${rate.retryAfter} s.`, { retryAfter: rate.retryAfter });
    // Billed as the endpoint it mirrors is (limits/ledger.ts): by its commits, else once answered.
    const ctx: Context = { ...deps.ctx, accountId: account.id, meter };
    return meter.run(() => action.run(ctx, { params: {}, query: {}, body: undefined, ...input })).catch(async (err) => {
      if (isQuotaExceeded(err)) await deps.limiter.refund(`console:${account.id}`, action.bucket);
      throw err;
    });
  };

  con.get("/console", (c) => c.redirect("/console/", 301));
  con.get("/console/", async (c) => {
    const session = await access.authenticate(readSessionCookie(c)).catch(() => undefined);
    if (session) return c.redirect("/console/memories", 302);
    return render(c, <P.MessagePage chrome={chrome(c)} title="Sign in to the mm console" message="You are not signed in." detail={<P.SignInHelp />} />, 401);
  });

  // ---------------------------------------------------------------- signing in and out

  con.get("/console/signin", async (c) => {
    const token = c.req.query("token") ?? "";
    const site = c.req.header("Sec-Fetch-Site");
    // A link followed from another site (a web mail, a chat, a page that wants you signed in to
    // its account) asks first; typed, pasted or opened by `mm console`, it signs in at once.
    if (site !== undefined && site !== "none" && site !== "same-origin") {
      const account = await access.checkLink(token);
      return render(c, <P.ConfirmSignIn chrome={chrome(c)} account={account} token={token} />);
    }
    return signIn(c, token);
  });
  con.post("/console/signin", formLimit, async (c) => {
    assertSameOrigin(c);
    return signIn(c, (await formOf(c)).token ?? "");
  });
  const signIn = async (c: HonoContext<Env>, token: string) => {
    const { secret, session } = await access.redeem(token);
    const previous = readSessionCookie(c);
    if (previous) await access.signOut(previous);
    setSessionCookie(c, secret, (Date.parse(session.expiresAt) - deps.ctx.clock().getTime()) / 1000);
    return c.redirect("/console/", 303);
  };

  con.post("/console/signout", formLimit, signedIn, async (c) => {
    await guarded(c);
    await access.signOut(c.get("secret"));
    clearSessionCookie(c);
    return c.redirect("/console/signed-out", 303);
  });
  con.get("/console/signed-out", (c) =>
    render(c, <P.MessagePage chrome={chrome(c)} title="Signed out" message="You are signed out of the mm console." detail={<P.SignInHelp />} />),
  );

  // ---------------------------------------------------------------- API keys (not API operations: they count nothing)

  const keysPage = async (c: HonoContext<Env>, extra: { created?: Awaited<ReturnType<typeof deps.accounts.createKey>>; error?: string; name?: string } = {}, status = 200) => {
    const { items } = await deps.accounts.listKeys(c.get("session").account.id);
    return render(c, <P.KeysPage chrome={chrome(c, "keys")} keys={items.reverse()} warning={KEY_SHOWN_ONCE} {...extra} />, status);
  };
  con.get("/console/keys", signedIn, (c) => keysPage(c));
  con.post("/console/keys", formLimit, signedIn, async (c) => {
    const form = await guarded(c);
    try {
      const created = await deps.accounts.createKey({ account: c.get("session").account.id, name: form.name ?? "" });
      // Shown once, in this answer only: never cached, never in a URL.
      return keysPage(c, { created });
    } catch (err) {
      const mm = toMmError(err);
      if (mm.code !== "VALIDATION_ERROR") throw err;
      const detail = (mm.extra.details as { field: string; message: string }[] | undefined)?.[0];
      return keysPage(c, { error: detail?.field === "name" ? `The name ${detail.message}.` : mm.message, name: form.name }, 400);
    }
  });
  const ownKey = async (c: HonoContext<Env>) => {
    const id = c.req.param("id") ?? "";
    const key = (await deps.accounts.listKeys(c.get("session").account.id)).items.find((k) => k.id === id);
    if (!key) throw new MmError("NOT_FOUND", `Key ${id} does not exist.`);
    return key;
  };
  con.get("/console/keys/:id/revoke", signedIn, async (c) => render(c, <P.RevokeKeyPage chrome={chrome(c, "keys")} keyInfo={await ownKey(c)} />));
  con.post("/console/keys/:id/revoke", formLimit, signedIn, async (c) => {
    await guarded(c);
    await deps.accounts.revokeKey(c.req.param("id") ?? "", c.get("session").account.id);
    return c.redirect("/console/keys", 303);
  });

  // ---------------------------------------------------------------- usage (reading it counts nothing)

  con.get("/console/usage", signedIn, async (c) => {
    const { account } = c.get("session");
    const [usage, daily] = await Promise.all([deps.ledger.usage(account.id, account.quota), deps.ledger.daily(account.id)]);
    return render(
      c,
      <P.UsagePage chrome={chrome(c, "usage")} used={usage.used} limit={usage.limit} resetAt={usage.resetAt} period={usage.period} days={daily.days} rateLimits={deps.limiter.limits} />,
    );
  });

  // ---------------------------------------------------------------- memories

  con.get("/console/memories", signedIn, async (c) => {
    const query = c.req.query() as P.MemoryQuery;
    const filters = nonEmpty({ userId: query.userId, agentId: query.agentId, project: query.project?.trim() });
    const page = (props: Partial<Parameters<typeof P.MemoriesPage>[0]>, status = 200) =>
      render(c, <P.MemoriesPage chrome={chrome(c, "memories")} query={query} {...props} />, status);
    try {
      if (query.q?.trim()) {
        const body = {
          query: query.q,
          ...filters,
          ...(query.tags?.trim() ? { tags: query.tags.split(",").map((t) => t.trim()).filter(Boolean) } : {}),
          ...nonEmpty({ mode: query.mode, threshold: numberOr(query.threshold), limit: numberOr(query.limit) }),
        };
        const found = await perform(c, ACTIONS.searchMemories, { body });
        return page({ search: { results: found.results, closest: found.closest, mode: body.mode ?? "hybrid", threshold: (body.threshold as number | undefined) ?? 0.5 } });
      }
      const list = await perform(c, ACTIONS.listMemories, { query: nonEmpty({ ...filters, tags: query.tags, page: query.page, limit: query.limit }) });
      return page({ list: list as import("../core/memories.js").Page<import("../core/memories.js").MemoryListItem> });
    } catch (err) {
      const mm = toMmError(err);
      if (mm.status >= 500) throw err;
      return page({ error: mm.message }, mm.status);
    }
  });
  con.get("/console/memories/:id", signedIn, async (c) => {
    const { memory, entities, history } = await perform(c, ACTIONS.memory, { params: { id: c.req.param("id") } });
    return render(c, <P.MemoryPage chrome={chrome(c, "memories")} memory={memory} entities={entities} history={history} />);
  });

  // ---------------------------------------------------------------- graph

  con.get("/console/graph", signedIn, async (c) => {
    const query: P.GraphQuery = { entityType: c.req.query("entityType"), type: c.req.query("type") };
    try {
      const graph = await perform(c, ACTIONS.graph, { query: nonEmpty({ entityType: query.entityType, type: query.type }) });
      return render(c, <P.GraphPage chrome={chrome(c, "graph")} query={query} graph={graph} />);
    } catch (err) {
      const mm = toMmError(err);
      if (mm.status >= 500) throw err;
      return render(c, <P.GraphPage chrome={chrome(c, "graph")} query={query} error={mm.message} />, mm.status);
    }
  });
  con.get("/console/graph/entities/:id", signedIn, async (c) => {
    const view = await perform(c, ACTIONS.entity, { params: { id: c.req.param("id") } });
    return render(c, <P.EntityPage chrome={chrome(c, "graph")} view={view} />);
  });
  /** The graph page's side panel: the same view as JSON, built into the page with textContent. */
  con.get("/console/api/entities/:id", signedIn, async (c) => c.json(await perform(c, ACTIONS.entity, { params: { id: c.req.param("id") } })));

  con.all("/console/*", (c) => {
    throw new MmError("NOT_FOUND", `There is no console page at ${c.req.path}.`);
  });

  con.onError((err, c) => {
    // What a /v1 client would see: operator-only errors answer generically; the log has the details.
    const raw = toMmError(err);
    const mm = forClient(raw);
    if (mm !== raw) deps.log?.({ time: new Date().toISOString(), level: "error", method: c.req.method, path: c.req.path, code: raw.code, error: errorDetail(err) });
    if (mm.code === "RATE_LIMIT_EXCEEDED") c.header("Retry-After", String(mm.extra.retryAfter));
    if (c.req.path.startsWith("/console/api/")) return c.json(mm.toBody(), mm.status as 400);
    if (mm.code === "UNAUTHORIZED") {
      if (readSessionCookie(c)) clearSessionCookie(c);
      const title = c.req.path === "/console/signin" ? "This link can't sign you in" : "Sign in to the mm console";
      return render(c, <P.MessagePage chrome={{ asset }} title={title} message={mm.message} detail={<P.SignInHelp />} />, 401);
    }
    return render(c, <P.MessagePage chrome={chrome(c as HonoContext<Env>)} title={TITLES[mm.code] ?? "Something went wrong"} message={mm.message} />, mm.status);
  });

  app.route("/", con);
}

const TITLES: Partial<Record<string, string>> = {
  NOT_FOUND: "Not found",
  MEMORY_NOT_FOUND: "Not found",
  ENTITY_NOT_FOUND: "Not found",
  FORBIDDEN: "Refused",
  RATE_LIMIT_EXCEEDED: "Too many requests",
  QUOTA_EXCEEDED: "Monthly quota used up",
  VALIDATION_ERROR: "Invalid request",
  PAYLOAD_TOO_LARGE: "Too large",
};

/** The fields of a urlencoded or multipart form, as strings. */
async function formOf(c: HonoContext): Promise<Record<string, string>> {
  const body = await c.req.parseBody().catch(() => ({}));
  return Object.fromEntries(Object.entries(body).filter((e): e is [string, string] => typeof e[1] === "string"));
}

/** The entries whose value is set and not blank: an empty form field means "no filter". */
function nonEmpty<T extends Record<string, unknown>>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined && v !== null && !(typeof v === "string" && v.trim() === ""))) as Partial<T>;
}

/** A number from a form field, or the text itself so that validation names what is wrong with it. */
function numberOr(v: string | undefined): number | string | undefined {
  if (v === undefined || v.trim() === "") return undefined;
  const n = Number(v);
  return Number.isFinite(n) ? n : v;
}
