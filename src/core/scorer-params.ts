// Written by scripts/calibrate.mjs (`npm run calibrate`): the hybrid scorer's constants per embedding
// model (core/scorer.ts), fitted on bench/everyday's development users and LoCoMo's development
// split. Don't edit by hand: rerun the fit.
import type { ScorerParams } from "./scorer.js";

export const FITTED: Record<string, Omit<ScorerParams, "model">> = {
  "use-lite:universal-sentence-encoder-lite": {
    notes: { bias: -6.9593, cosine: 12.1589, keyword: 0.0000, keyword2: 2.8050, every: 1.4720, speaker: 0.0000 },
    turns: { bias: -5.2282, cosine: 5.7240, keyword: 4.0021, keyword2: 0.8963, every: 0.0000, speaker: 2.0401 },
  },
};
