// Value lists the CLI needs at start-up (help texts, prompts, plan quotas), kept apart from the
// zod schemas so that a command like `mm memories list` never loads zod.

export const PLANS = ["free", "hobby", "enterprise"] as const;

/** Monthly operations per plan (spec §8.2); null is unlimited. */
export const PLAN_QUOTAS: Record<(typeof PLANS)[number], number | null> = { free: 1_000, hobby: 50_000, enterprise: null };

export const ENTITY_TYPES = ["PERSON", "ORGANIZATION", "LOCATION", "PRODUCT", "EVENT", "CONCEPT", "OTHER"] as const;
export type EntityType = (typeof ENTITY_TYPES)[number];
