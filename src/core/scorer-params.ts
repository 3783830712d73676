// Written by scripts/calibrate.mjs (`npm run calibrate`): the hybrid scorer's constants per embedding
// model (core/scorer.ts), fitted on bench/everyday's development users and LoCoMo's development
// split. Don't edit by hand: rerun the fit.
import type { ScorerParams } from "./scorer.js";

export const FITTED: Record<string, Omit<ScorerParams, "model">> = {
  "use-lite:universal-sentence-encoder-lite": {
    notes: { bias: -6.9593, cosine: 12.1589, keyword: 0.0000, keyword2: 2.8050, every: 1.4720 },
    turns: { bias: -4.1952, cosine: 6.5130, keyword: 2.1355, keyword2: 3.3988, every: 0.0000 },
  },
};
