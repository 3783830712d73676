// Written by scripts/calibrate.mjs (`npm run calibrate`): the hybrid scorer's constants per embedding
// model (core/scorer.ts), fitted on bench/everyday's development users and LoCoMo's development
// split. Don't edit by hand: rerun the fit.
import type { ScorerParams } from "./scorer.js";

export const FITTED: Record<string, Omit<ScorerParams, "model">> = {
  "use-lite:universal-sentence-encoder-lite": {
    notes: { bias: -6.9593, cosine: 12.1589, keyword: 0.0000, keyword2: 2.8050, every: 1.4720, speaker: 0.0000, length: 0.0000 },
    turns: { bias: -8.3486, cosine: 6.6303, keyword: 3.3158, keyword2: 1.1424, every: 0.0000, speaker: 1.9295, length: 3.7189 },
  },
};
