import { z } from "zod";
import { charLength, isWellFormed } from "./validate.js";

export const PLANS = ["free", "hobby", "enterprise"] as const;

/** Monthly operations per plan (spec §8.2); null is unlimited. */
export const PLAN_QUOTAS: Record<(typeof PLANS)[number], number | null> = { free: 1_000, hobby: 50_000, enterprise: null };

const label = z
  .string()
  .refine((s) => s.trim().length > 0, "must not be empty")
  .refine((s) => charLength(s) <= 100, "must be at most 100 characters")
  .refine(isWellFormed, "must be valid Unicode");

export const CreateAccountInput = z.strictObject({ name: label, plan: z.enum(PLANS).default("free") });
export const SetPlanInput = z.strictObject({ plan: z.enum(PLANS) });
export const CreateKeyInput = z.strictObject({ account: z.string().min(1, "must not be empty"), name: label });
