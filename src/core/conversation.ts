/**
 * Which conversation a memory belongs to, if any. Search scores a conversation's turn with
 * constants of its own (core/scorer.ts): a turn is read beside the turns around it and answers less
 * on its own than a note does. Two memories are turns of one conversation when both name the same
 * conversation:
 *
 * - in `metadata`, under a key such as `sessionId`, `session`, `conversationId`, `conversation`,
 *   `threadId`, `thread`, `chatId` or `dialogueId` (any case, with or without `_` or `-`), with a
 *   string or number value: `{"session": 3}`, `{"thread_id": "t-19"}`;
 * - or, failing that, by a tag that names one: `session_3`, `session:3`, `conversation-7`,
 *   `thread_abc`, `chat-2`, `session3` (not `sessions`).
 *
 * Anything else (including no metadata at all) belongs to no conversation. A pure function of the
 * memory itself, so a memory's score still depends only on the query and the memory.
 */

const KEYS = new Set(["sessionid", "session", "conversationid", "conversation", "threadid", "thread", "chatid", "chat", "dialogueid", "dialogue", "dialogid", "transcriptid", "transcript"]);
/** A tag that names a conversation: the word, then a separator and a name, or a number (`session_3`, `thread:abc`, `chat2`). */
const TAG = /^(session|conversation|thread|chat|dialogue|transcript)([-_:][\p{L}\p{N}][\p{L}\p{N}._-]*|\p{N}[\p{L}\p{N}._-]*)$/iu;

/** The conversation a memory is a turn of (`metadata` as stored: a JSON text or null), or null. */
export function conversationOf(metadata: string | null | undefined, tags: readonly string[] | null | undefined): string | null {
  if (metadata) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(metadata);
    } catch {
      parsed = undefined;
    }
    if (parsed && typeof parsed === "object" && !Array.isArray(parsed)) {
      for (const [key, value] of Object.entries(parsed)) {
        const k = key.toLowerCase().replace(/[-_]/g, "");
        if (!KEYS.has(k)) continue;
        if ((typeof value === "string" && value.trim()) || (typeof value === "number" && Number.isFinite(value))) return `${k}=${String(value)}`;
      }
    }
  }
  for (const tag of tags ?? []) if (TAG.test(tag)) return `tag=${tag.toLowerCase()}`;
  return null;
}

/**
 * The speaker a conversation turn opens with, as chat logs and LoCoMo store turns ("Caroline: I went
 * to…" → "Caroline"): one to four words of letters before a colon. Null when the turn names none.
 * Search counts a query's words that name the turn's speaker as a signal of their own (core/scorer.ts
 * turnEvidence): every turn of a speaker holds the name, so it says who spoke, not what was said.
 */
export function speakerOf(content: string): string | null {
  const m = SPEAKER.exec(content);
  return m ? m[1] : null;
}
const SPEAKER = /^(\p{L}[\p{L}\p{M}'’.-]*(?: \p{L}[\p{L}\p{M}'’.-]*){0,3}):\s/u;
