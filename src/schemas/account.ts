import * as z from "zod/mini";
import { PLANS } from "./enums.js";
import { parseWith, reference, text } from "./validate.js";

const label = text({ max: 100 });

export const CreateAccountInput = z.strictObject({ name: label, plan: z._default(z.enum(PLANS), "free") });
export const SetPlanInput = z.strictObject({ plan: z.enum(PLANS) });
export const CreateKeyInput = z.strictObject({ account: reference, name: label });

export function parseCreateAccount(raw: unknown): z.output<typeof CreateAccountInput> {
  return parseWith(CreateAccountInput, raw, "account");
}

export function parseSetPlan(raw: unknown): z.output<typeof SetPlanInput> {
  return parseWith(SetPlanInput, raw, "plan");
}

export function parseCreateKey(raw: unknown): z.output<typeof CreateKeyInput> {
  return parseWith(CreateKeyInput, raw, "key");
}
