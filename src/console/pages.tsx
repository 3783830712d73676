import type { Child, FC, PropsWithChildren } from "hono/jsx";
import type { Account, KeyInfo } from "../core/accounts.js";
import type { Entity } from "../core/entities.js";
import type { ExportedGraph, NeighborsResult } from "../core/graph.js";
import type { ChainLink, Memory, MemoryHistory, MemoryListItem, MemorySearchHit, Page } from "../core/memories.js";
import type { RateLimits } from "../limits/rate-limiter.js";
import { ENTITY_TYPES } from "../schemas/enums.js";
import { SEARCH_MODES } from "../schemas/memory.js";
import type { AssetUrls } from "./assets.js";

/**
 * The console's pages, server-rendered with Hono's JSX. Every value is text or an attribute that
 * JSX escapes; user data is never put in raw HTML, in a URL's scheme, or in a script.
 */

export type Screen = "keys" | "usage" | "memories" | "graph";

export interface Chrome {
  asset: AssetUrls;
  /** Absent on the pages seen before signing in. */
  account?: Account;
  csrf?: string;
  screen?: Screen;
}

const SCREENS: { id: Screen; label: string; href: string }[] = [
  { id: "memories", label: "Memories", href: "/console/memories" },
  { id: "graph", label: "Graph", href: "/console/graph" },
  { id: "keys", label: "API keys", href: "/console/keys" },
  { id: "usage", label: "Usage", href: "/console/usage" },
];

export const Layout: FC<PropsWithChildren<{ chrome: Chrome; title: string; scripts?: string[] }>> = ({ chrome, title, scripts = [], children }) => (
  <html lang="en">
    <head>
      <meta charset="utf-8" />
      <meta name="viewport" content="width=device-width, initial-scale=1" />
      <title>{`${title} · mm console`}</title>
      <link rel="icon" href="data:," />
      <link rel="stylesheet" href={chrome.asset("console.css")} />
      {["console.js", ...scripts].map((s) => (
        <script src={chrome.asset(s)} defer></script>
      ))}
    </head>
    <body>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="top">
        <a class="brand" href="/console/">
          mm <span>console</span>
        </a>
        {chrome.account && (
          <nav aria-label="Console">
            <ul>
              {SCREENS.map((s) => (
                <li>
                  <a href={s.href} aria-current={s.id === chrome.screen ? "page" : undefined}>
                    {s.label}
                  </a>
                </li>
              ))}
            </ul>
          </nav>
        )}
        {chrome.account && (
          <div class="who">
            <span class="account" title={chrome.account.id}>
              {chrome.account.name} <span class="plan">{chrome.account.plan}</span>
            </span>
            <form method="post" action="/console/signout">
              <Csrf token={chrome.csrf} />
              <button type="submit" class="link">
                Sign out
              </button>
            </form>
          </div>
        )}
      </header>
      <main id="main" tabindex={-1}>
        {children}
      </main>
    </body>
  </html>
);

const Csrf: FC<{ token?: string }> = ({ token }) => <input type="hidden" name="csrf" value={token ?? ""} />;

const When: FC<{ iso: string | null | undefined; never?: string }> = ({ iso, never = "never" }) =>
  iso ? <time datetime={iso}>{formatTime(iso)}</time> : <span class="muted">{never}</span>;

/** `2026-03-15 12:00 UTC`: one unambiguous form, the same for every reader. */
export function formatTime(iso: string): string {
  return `${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC`;
}

const Notice: FC<PropsWithChildren<{ kind?: "error" | "info" | "warning" }>> = ({ kind = "info", children }) => (
  <div class={`notice ${kind}`} role={kind === "error" ? "alert" : "status"}>
    {children}
  </div>
);

/** A table that scrolls sideways on a narrow screen, reachable by keyboard. */
const Scroll: FC<PropsWithChildren<{ label: string }>> = ({ label, children }) => (
  <div class="scroll" role="region" aria-label={label} tabindex={0}>
    {children}
  </div>
);

// ---------------------------------------------------------------- signing in and errors

export const MessagePage: FC<{ chrome: Chrome; title: string; message: string; detail?: Child }> = ({ chrome, title, message, detail }) => (
  <Layout chrome={chrome} title={title}>
    <section class="narrow">
      <h1>{title}</h1>
      <p>{message}</p>
      {detail}
    </section>
  </Layout>
);

export const SignInHelp: FC = () => (
  <div class="help">
    <p>To sign in, ask the person who runs this server for a sign-in link. They make one with:</p>
    <pre>
      <code>mm console link --account YOUR_ACCOUNT</code>
    </pre>
    <p>A link works once, for 15 minutes.</p>
  </div>
);

/** Shown when a sign-in link arrives from another site: one click here keeps another site from signing you in. */
export const ConfirmSignIn: FC<{ chrome: Chrome; account: Account; token: string }> = ({ chrome, account, token }) => (
  <Layout chrome={chrome} title="Sign in">
    <section class="narrow">
      <h1>Sign in to {account.name}</h1>
      <p>This link signs you in to the account {account.name}. It works once.</p>
      <form method="post" action="/console/signin">
        <input type="hidden" name="token" value={token} />
        <button type="submit" class="primary">
          Sign in
        </button>
      </form>
    </section>
  </Layout>
);

// ---------------------------------------------------------------- API keys

export const KeysPage: FC<{
  chrome: Chrome;
  keys: KeyInfo[];
  created?: KeyInfo & { key: string };
  error?: string;
  name?: string;
  warning: string;
}> = ({ chrome, keys, created, error, name, warning }) => {
  const live = keys.filter((k) => !k.revoked);
  const revoked = keys.filter((k) => k.revoked);
  return (
    <Layout chrome={chrome} title="API keys">
      <h1>API keys</h1>
      <p class="lead">
        Programs use a key to reach this account's memories over the <code>/v1</code> API: <code>Authorization: Bearer mm_…</code>.
      </p>
      {created && (
        <section class="new-key" aria-labelledby="new-key-title">
          <h2 id="new-key-title">Your new key “{created.name}”</h2>
          <Notice kind="warning">
            <strong>Copy it now.</strong> Key {created.id} for account {chrome.account!.name}: {warning}
          </Notice>
          <div class="copy-row">
            <label for="new-key">Key</label>
            <input id="new-key" class="mono" type="text" readonly value={created.key} autocomplete="off" spellcheck={false} />
            <button type="button" data-copy="new-key">
              Copy
            </button>
            <span class="copied" role="status" aria-live="polite"></span>
          </div>
        </section>
      )}
      <section aria-labelledby="create-title">
        <h2 id="create-title">Create a key</h2>
        <form method="post" action="/console/keys" class="inline">
          <Csrf token={chrome.csrf} />
          <div class="field">
            <label for="key-name">Name</label>
            <input
              id="key-name"
              name="name"
              type="text"
              required
              maxlength={100}
              value={name ?? ""}
              placeholder="laptop, ci, my-agent"
              aria-invalid={error ? "true" : undefined}
              aria-describedby={error ? "key-name-error" : "key-name-hint"}
            />
            {error ? (
              <p id="key-name-error" class="field-error">
                {error}
              </p>
            ) : (
              <p id="key-name-hint" class="hint">
                What the key is for; shown in this list.
              </p>
            )}
          </div>
          <button type="submit" class="primary">
            Create key
          </button>
        </form>
      </section>
      <section aria-labelledby="list-title">
        <h2 id="list-title">Keys ({live.length})</h2>
        {keys.length === 0 ? (
          <p class="muted">No keys yet.</p>
        ) : (
          <Scroll label="API keys">
            <table>
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Prefix</th>
                  <th scope="col">Created</th>
                  <th scope="col">Last used</th>
                  <th scope="col">Status</th>
                </tr>
              </thead>
              <tbody>
                {[...live, ...revoked].map((k) => (
                  <tr class={k.revoked ? "revoked" : undefined}>
                    <td>{k.name}</td>
                    <td class="mono">{k.prefix}…</td>
                    <td>
                      <When iso={k.createdAt} />
                    </td>
                    <td>
                      <When iso={k.lastUsedAt} />
                    </td>
                    <td>
                      {k.revoked ? (
                        <span>
                          revoked <When iso={k.revokedAt} />
                        </span>
                      ) : (
                        <a class="button danger" href={`/console/keys/${encodeURIComponent(k.id)}/revoke`} aria-label={`Revoke ${k.name}`}>
                          Revoke…
                        </a>
                      )}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </Scroll>
        )}
      </section>
    </Layout>
  );
};

export const RevokeKeyPage: FC<{ chrome: Chrome; keyInfo: KeyInfo }> = ({ chrome, keyInfo }) => (
  <Layout chrome={chrome} title="Revoke key">
    <section class="narrow">
      <h1>Revoke the key “{keyInfo.name}”?</h1>
      <p>
        Key <span class="mono">{keyInfo.prefix}…</span>, created <When iso={keyInfo.createdAt} />, last used <When iso={keyInfo.lastUsedAt} />.
      </p>
      <Notice kind="warning">Every program that uses it is refused from its next request. This can't be undone.</Notice>
      <form method="post" action={`/console/keys/${encodeURIComponent(keyInfo.id)}/revoke`} class="actions">
        <Csrf token={chrome.csrf} />
        <button type="submit" class="danger">
          Revoke key
        </button>
        <a href="/console/keys">Cancel</a>
      </form>
    </section>
  </Layout>
);

// ---------------------------------------------------------------- usage

export const UsagePage: FC<{
  chrome: Chrome;
  used: number;
  limit: number | null;
  resetAt: string;
  period: string;
  days: number[];
  rateLimits: RateLimits;
}> = ({ chrome, used, limit, resetAt, period, days, rateLimits }) => (
  <Layout chrome={chrome} title="Usage" scripts={["chart.umd.min.js", "usage.js"]}>
    <h1>Usage</h1>
    <section aria-labelledby="quota-title" class="card">
      <h2 id="quota-title">This month ({period})</h2>
      <p class="big">
        <strong data-testid="used">{used.toLocaleString("en")}</strong> operations of {limit === null ? "unlimited" : limit.toLocaleString("en")}
        {limit !== null && <span class="muted"> ({Math.min(100, Math.round((used / limit) * 100))} %)</span>}
      </p>
      {limit !== null && (
        <progress max={limit} value={Math.min(used, limit)} aria-label="Share of the monthly quota used">
          {used} of {limit}
        </progress>
      )}
      <p>
        Plan <strong>{chrome.account!.plan}</strong>. The count resets on <When iso={resetAt} />.
      </p>
    </section>
    <section aria-labelledby="daily-title" class="card">
      <h2 id="daily-title">Per day</h2>
      <div class="chart">
        <canvas id="usage-chart" data-days={JSON.stringify(days)} data-period={period} role="img" aria-label={`Operations per day in ${period}; the numbers are in the table below.`}></canvas>
      </div>
      <details>
        <summary>Numbers per day</summary>
        <Scroll label="Operations per day">
          <table>
            <thead>
              <tr>
                <th scope="col">Day (UTC)</th>
                <th scope="col">Operations</th>
              </tr>
            </thead>
            <tbody>
              {days.map((n, i) => (
                <tr>
                  <td>{`${period}-${String(i + 1).padStart(2, "0")}`}</td>
                  <td class="num">{n}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </Scroll>
      </details>
    </section>
    <section aria-labelledby="rate-title" class="card">
      <h2 id="rate-title">Rate limits</h2>
      <p>Requests per minute, for each key (the console counts apart from your keys, with the same limits):</p>
      <Scroll label="Rate limits">
        <table>
          <thead>
            <tr>
              <th scope="col">Kind</th>
              <th scope="col">Per minute</th>
              <th scope="col">Which requests</th>
            </tr>
          </thead>
          <tbody>
            <tr>
              <td>read</td>
              <td class="num">{rateLimits.read}</td>
              <td>GET: get and list</td>
            </tr>
            <tr>
              <td>write</td>
              <td class="num">{rateLimits.write}</td>
              <td>create, update, delete</td>
            </tr>
            <tr>
              <td>search</td>
              <td class="num">{rateLimits.search}</td>
              <td>memory search</td>
            </tr>
          </tbody>
        </table>
      </Scroll>
    </section>
  </Layout>
);

// ---------------------------------------------------------------- memories

export interface MemoryQuery {
  q?: string;
  mode?: string;
  threshold?: string;
  userId?: string;
  agentId?: string;
  project?: string;
  tags?: string;
  page?: string;
  limit?: string;
}

export const MemoriesPage: FC<{
  chrome: Chrome;
  query: MemoryQuery;
  list?: Page<MemoryListItem>;
  search?: { results: MemorySearchHit[]; closest?: MemorySearchHit; mode: string; threshold: number };
  error?: string;
}> = ({ chrome, query, list, search, error }) => (
  <Layout chrome={chrome} title={query.q ? `Search: ${query.q}` : "Memories"}>
    <h1>Memories</h1>
    <form method="get" action="/console/memories" class="filters" role="search">
      <div class="field grow">
        <label for="q">Search</label>
        <input id="q" name="q" type="search" value={query.q ?? ""} placeholder="what does alice drink?" />
      </div>
      <div class="field">
        <label for="mode">Mode</label>
        <select id="mode" name="mode">
          {SEARCH_MODES.map((m) => (
            <option value={m} selected={(query.mode || "hybrid") === m}>
              {m}
            </option>
          ))}
        </select>
      </div>
      <div class="field small">
        <label for="threshold">Threshold</label>
        <input id="threshold" name="threshold" type="number" min="0" max="1" step="0.05" value={query.threshold ?? ""} placeholder="0.5" />
      </div>
      <div class="field">
        <label for="userId">User</label>
        <input id="userId" name="userId" type="text" value={query.userId ?? ""} />
      </div>
      <div class="field">
        <label for="agentId">Agent</label>
        <input id="agentId" name="agentId" type="text" value={query.agentId ?? ""} />
      </div>
      <div class="field">
        <label for="project">Project</label>
        <input id="project" name="project" type="text" value={query.project ?? ""} aria-describedby="project-hint" />
        <span id="project-hint" class="hint">
          and global ones
        </span>
      </div>
      <div class="field">
        <label for="tags">Tags</label>
        <input id="tags" name="tags" type="text" value={query.tags ?? ""} placeholder="work, travel" aria-describedby="tags-hint" />
        <span id="tags-hint" class="hint">
          all must match
        </span>
      </div>
      <div class="field buttons">
        <button type="submit" class="primary">
          {query.q ? "Search" : "Search or filter"}
        </button>
        {(query.q || query.userId || query.agentId || query.project || query.tags) && <a href="/console/memories">Clear</a>}
      </div>
    </form>
    {error && <Notice kind="error">{error}</Notice>}
    {search && (
      <section aria-labelledby="results-title">
        <h2 id="results-title">
          {search.results.length} result{search.results.length === 1 ? "" : "s"}
        </h2>
        <p class="muted" data-testid="search-mode">
          mode {search.mode} · threshold {search.threshold} · best first
        </p>
        <ol class="memories">
          {search.results.map((m) => (
            <MemoryCard memory={m} score={m.score} />
          ))}
        </ol>
        {search.results.length === 0 && !search.closest && <p>No memories to search.</p>}
        {search.results.length === 0 && search.closest && (
          <p data-testid="closest">
            Nothing scored {search.threshold} or more. The closest scored {search.closest.score.toFixed(3)}: “{search.closest.content.length > 80 ? `${search.closest.content.slice(0, 79)}…` : search.closest.content}”. A threshold of{" "}
            {Math.floor(search.closest.score * 100) / 100} shows it{search.mode === "hybrid" ? "; the semantic mode with 0.3 searches by meaning alone" : ""}.
          </p>
        )}
      </section>
    )}
    {list && (
      <section aria-labelledby="list-title">
        <h2 id="list-title">
          {list.pagination.total} memor{list.pagination.total === 1 ? "y" : "ies"}
        </h2>
        <ol class="memories">
          {list.items.map((m) => (
            <MemoryCard memory={m} />
          ))}
        </ol>
        <Pager query={query} pagination={list.pagination} />
      </section>
    )}
  </Layout>
);

const MemoryCard: FC<{ memory: MemoryListItem | MemorySearchHit; score?: number }> = ({ memory, score }) => (
  <li class="memory">
    <a href={`/console/memories/${encodeURIComponent(memory.id)}`} class="content">
      {excerpt(memory.content)}
    </a>
    <p class="meta">
      {score !== undefined && <span class="score" title="score, 0 to 1">score {score.toFixed(2)}</span>}
      <span>user {memory.userId}</span>
      {memory.agentId && <span>agent {memory.agentId}</span>}
      {memory.project && <span>project {memory.project}</span>}
      {memory.tags?.map((t) => (
        <span class="tag">{t}</span>
      ))}
      <When iso={memory.createdAt} />
    </p>
  </li>
);

function excerpt(s: string): string {
  return s.length > 400 ? `${s.slice(0, 400)}…` : s;
}

const Pager: FC<{ query: MemoryQuery; pagination: Page<unknown>["pagination"] }> = ({ query, pagination }) => {
  const { page, totalPages } = pagination;
  if (totalPages <= 1) return <></>;
  const href = (p: number) => `/console/memories?${new URLSearchParams({ ...pick(query, ["userId", "agentId", "project", "tags", "limit"]), page: String(p) })}`;
  return (
    <nav class="pager" aria-label="Pages">
      {page > 1 ? <a href={href(page - 1)} rel="prev">← Newer</a> : <span class="muted">← Newer</span>}
      <span>
        Page {page} of {totalPages}
      </span>
      {page < totalPages ? <a href={href(page + 1)} rel="next">Older →</a> : <span class="muted">Older →</span>}
    </nav>
  );
};

function pick(query: MemoryQuery, keys: (keyof MemoryQuery)[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const k of keys) if (query[k]) out[k] = query[k]!;
  return out;
}

export const MemoryPage: FC<{ chrome: Chrome; memory: Memory; entities: Entity[]; history?: MemoryHistory }> = ({ chrome, memory, entities, history }) => (
  <Layout chrome={chrome} title="Memory">
    <p>
      <a href="/console/memories">← Memories</a>
    </p>
    <h1>Memory</h1>
    {memory.supersededBy && (
      <p class="notice" data-testid="superseded">
        Replaced by <a href={`/console/memories/${encodeURIComponent(memory.supersededBy)}`}>{memory.supersededBy}</a>
        {memory.supersededAt && (
          <>
            {" "}
            since <When iso={memory.supersededAt} />
          </>
        )}
        . Search leaves it out unless asked for replaced memories.
      </p>
    )}
    <article class="card">
      <p class="memory-content" data-testid="content">
        {memory.content}
      </p>
    </article>
    <section aria-labelledby="fields-title" class="card">
      <h2 id="fields-title">Fields</h2>
      <dl class="fields">
        <dt>id</dt>
        <dd class="mono">{memory.id}</dd>
        <dt>user</dt>
        <dd>{memory.userId}</dd>
        <dt>agent</dt>
        <dd>{memory.agentId ?? <span class="muted">none</span>}</dd>
        <dt>project</dt>
        <dd>{memory.project ?? <span class="muted">none (global)</span>}</dd>
        <dt>tags</dt>
        <dd>{memory.tags?.length ? memory.tags.map((t) => <span class="tag">{t}</span>) : <span class="muted">none</span>}</dd>
        <dt>created</dt>
        <dd>
          <When iso={memory.createdAt} />
        </dd>
        <dt>updated</dt>
        <dd>
          <When iso={memory.updatedAt} />
        </dd>
      </dl>
    </section>
    <section aria-labelledby="metadata-title" class="card">
      <h2 id="metadata-title">Metadata</h2>
      {memory.metadata ? (
        <pre class="json" data-testid="metadata" tabindex={0}>
          {JSON.stringify(memory.metadata, null, 2)}
        </pre>
      ) : (
        <p class="muted">None.</p>
      )}
    </section>
    <section aria-labelledby="entities-title" class="card">
      <h2 id="entities-title">Linked entities</h2>
      {entities.length ? (
        <ul class="chips">
          {entities.map((e) => (
            <li>
              <a href={`/console/graph/entities/${encodeURIComponent(e.id)}`}>
                {e.name} <span class={`type t-${e.type}`}>{e.type}</span>
              </a>
            </li>
          ))}
        </ul>
      ) : (
        <p class="muted">None.</p>
      )}
    </section>
    {history && <HistorySection history={history} />}
  </Layout>
);

/** A memory's versions and its replacement chain (GET /v1/memories/:id/history). */
const HistorySection: FC<{ history: MemoryHistory }> = ({ history }) => {
  const chain = (links: ChainLink[]) => (
    <ul class="chain">
      {links.map((l) => (
        <li>
          <a href={`/console/memories/${encodeURIComponent(l.id)}`}>{excerpt(l.content)}</a> <When iso={l.createdAt} />
        </li>
      ))}
    </ul>
  );
  return (
    <section aria-labelledby="history-title" class="card" data-testid="history">
      <h2 id="history-title">History</h2>
      <ol class="versions">
        {history.versions.map((v) => (
          <li>
            <span class="mono">v{v.version}</span> {excerpt(v.content)} <span class="muted">from</span> <When iso={v.validFrom} />{" "}
            {v.validTo ? (
              <>
                <span class="muted">until</span> <When iso={v.validTo} />
              </>
            ) : (
              <span class="muted">(current)</span>
            )}
          </li>
        ))}
      </ol>
      {history.replaced.length > 0 && (
        <>
          <h3>It replaced</h3>
          {chain(history.replaced)}
        </>
      )}
      {history.replacedBy.length > 0 && (
        <>
          <h3>Replaced by</h3>
          {chain(history.replacedBy)}
        </>
      )}
    </section>
  );
};

// ---------------------------------------------------------------- graph

export interface GraphQuery {
  entityType?: string;
  type?: string;
}

export const GraphPage: FC<{ chrome: Chrome; query: GraphQuery; graph?: ExportedGraph; error?: string }> = ({ chrome, query, graph, error }) => (
  <Layout chrome={chrome} title="Graph" scripts={["cytoscape.min.js", "graph.js"]}>
    <h1>Graph</h1>
    <form method="get" action="/console/graph" class="filters">
      <div class="field">
        <label for="entityType">Entity type</label>
        <select id="entityType" name="entityType">
          <option value="">all</option>
          {ENTITY_TYPES.map((t) => (
            <option value={t} selected={query.entityType === t}>
              {t}
            </option>
          ))}
        </select>
      </div>
      <div class="field">
        <label for="relType">Relation type</label>
        <input id="relType" name="type" type="text" value={query.type ?? ""} placeholder="WORKS_FOR" />
      </div>
      <div class="field buttons">
        <button type="submit" class="primary">
          Filter
        </button>
        {(query.entityType || query.type) && <a href="/console/graph">Clear</a>}
      </div>
    </form>
    {error && <Notice kind="error">{error}</Notice>}
    {graph && (
      <div class="graph-layout">
        <section class="graph-wrap" aria-labelledby="graph-title">
          <h2 id="graph-title" class="sr-only">Drawing</h2>
          <div class="graph-tools" role="toolbar" aria-label="Zoom">
            <button type="button" data-zoom="in" aria-label="Zoom in">+</button>
            <button type="button" data-zoom="out" aria-label="Zoom out">−</button>
            <button type="button" data-zoom="fit">Fit</button>
          </div>
          {/* Cytoscape.js adds an inline <style> (which the CSP refuses) unless an element with this id exists; console.css has its rule. */}
          <template id="__________cytoscape_stylesheet"></template>
          <div
            id="graph"
            data-graph={JSON.stringify(graph)}
            role="img"
            aria-label={`${graph.entities.length} entities and ${graph.relations.length} relations; the list beside it has every entity.`}
          ></div>
          <p class="hint">Drag to pan, scroll or pinch to zoom, click an entity to see its relations and memories.</p>
        </section>
        <aside class="side">
          <section id="entity-panel" aria-live="polite" aria-labelledby="panel-title">
            <h2 id="panel-title">Entities</h2>
            <p class="muted">
              {graph.entities.length} entities, {graph.relations.length} relations. Choose one to see its relations and memories.
            </p>
          </section>
          <ul class="entity-list" aria-label="Entities">
            {graph.entities.map((e) => (
              <li>
                <a href={`/console/graph/entities/${encodeURIComponent(e.id)}`} data-entity={e.id}>
                  {e.name} <span class={`type t-${e.type}`}>{e.type}</span>
                </a>
              </li>
            ))}
          </ul>
        </aside>
      </div>
    )}
  </Layout>
);

export interface EntityView {
  entity: Entity;
  neighbors: NeighborsResult;
  memories: Page<MemoryListItem>;
}

export const EntityPage: FC<{ chrome: Chrome; view: EntityView }> = ({ chrome, view }) => {
  const { entity, neighbors, memories } = view;
  const names = new Map([[neighbors.root.id, neighbors.root], ...neighbors.nodes.map((n) => [n.id, n] as const)]);
  return (
    <Layout chrome={chrome} title={entity.name}>
      <p>
        <a href="/console/graph">← Graph</a>
      </p>
      <h1>
        {entity.name} <span class={`type t-${entity.type}`}>{entity.type}</span>
      </h1>
      {entity.description && <p class="lead">{entity.description}</p>}
      <section class="card" aria-labelledby="rel-title">
        <h2 id="rel-title">Relations ({neighbors.edges.length})</h2>
        {neighbors.edges.length ? (
          <ul class="relations">
            {neighbors.edges.map((r) => {
              const out = r.sourceId === entity.id;
              const other = names.get(out ? r.targetId : r.sourceId);
              return (
                <li>
                  {out ? "→" : "←"} <span class="rel">{r.type}</span>{" "}
                  {other ? <a href={`/console/graph/entities/${encodeURIComponent(other.id)}`}>{other.name}</a> : <span class="muted">?</span>}
                </li>
              );
            })}
          </ul>
        ) : (
          <p class="muted">None.</p>
        )}
      </section>
      <section class="card" aria-labelledby="mem-title">
        <h2 id="mem-title">Memories ({memories.pagination.total})</h2>
        {memories.items.length ? (
          <ol class="memories">
            {memories.items.map((m) => (
              <MemoryCard memory={m} />
            ))}
          </ol>
        ) : (
          <p class="muted">None.</p>
        )}
      </section>
    </Layout>
  );
};
