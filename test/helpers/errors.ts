import { expect } from "vitest";

/** The `code` of the MmError a promise rejects with; fails the test if it resolves. */
export async function codeOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    return (err as { code: string }).code;
  }
  throw new Error("expected an error");
}

/** The error a promise rejects with, checked to be a `type`; fails the test if it resolves. */
export async function rejection<T>(p: Promise<unknown>, type: abstract new (...args: never[]) => T): Promise<T> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(type);
  return err as T;
}
