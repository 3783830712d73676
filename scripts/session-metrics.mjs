// Session-level figures of a turn ranking, as LoCoMo papers report them beside turn recall
// (`npm run bench:locomo`): the turns' sessions ranked by their best turn, so a session ranks where
// its first turn does.
//   - Hit@1: the first turn's session holds an evidence turn;
//   - NDCG@5: over the first five sessions so ranked, a session relevant when it holds an evidence
//     turn, against the ideal order of the evidence sessions (at most five).
// Only the turns the search returned are ranked: with ten turns, fewer than five sessions may
// appear, and a missing one counts as not relevant.

/**
 * `retrieved`: turn ids in rank order (null for a hit that maps to no turn); `evidence`: the
 * evidence turn ids; `sessionOf`: a turn id's session. Returns { hit1, ndcg5 }, each in [0, 1].
 */
export function sessionMetrics(retrieved, evidence, sessionOf) {
  const relevant = new Set(evidence.map(sessionOf));
  const sessions = [];
  for (const id of retrieved) {
    if (id === null || id === undefined) continue;
    const s = sessionOf(id);
    if (!sessions.includes(s)) sessions.push(s);
  }
  const gain = (i) => 1 / Math.log2(i + 2);
  let dcg = 0;
  sessions.slice(0, 5).forEach((s, i) => {
    if (relevant.has(s)) dcg += gain(i);
  });
  let ideal = 0;
  for (let i = 0; i < Math.min(5, relevant.size); i++) ideal += gain(i);
  return { hit1: sessions.length > 0 && relevant.has(sessions[0]) ? 1 : 0, ndcg5: ideal > 0 ? dcg / ideal : 0 };
}
