/** The `code` of the MmError a promise rejects with; fails the test if it resolves. */
export async function codeOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    return (err as { code: string }).code;
  }
  throw new Error("expected an error");
}
