import { MmError } from "../errors.js";
import type { Context } from "./context.js";

export async function exportAgentsMd(_ctx: Context, _file: string, _options: { userId: string }): Promise<{ memories: number; changed: boolean; project: string }> {
  throw new MmError("VALIDATION_ERROR", "not yet");
}
export async function importAgentsMd(_ctx: Context, _file: string, _options: { userId: string; agentId?: string; deleteMissing?: boolean; dryRun?: boolean }): Promise<import("./markdown.js").MarkdownImportResult> {
  throw new MmError("VALIDATION_ERROR", "not yet");
}
