/** Kept in sync with package.json by test/cli/version.test.ts; read without importing JSON at start-up. */
export const VERSION = "0.1.0";
