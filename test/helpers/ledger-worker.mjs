// A separate process charging the quota ledger: node ledger-worker.mjs <ledgerDir> <accountId> <count> <limit|unlimited>
// Prints "ack <n>" after each charge returns (the acknowledgement) and "refused" on QUOTA_EXCEEDED.
import { QuotaLedger } from "../../dist/limits/ledger.js";

const [dir, account, count, limitArg] = process.argv.slice(2);
const limit = limitArg === "unlimited" ? null : Number(limitArg);
const ledger = new QuotaLedger(dir);
for (let i = 0; i < Number(count); i++) {
  try {
    await ledger.charge(account, limit, "write");
    process.stdout.write(`ack ${i + 1}\n`);
  } catch (err) {
    if (err.code !== "QUOTA_EXCEEDED") throw err;
    process.stdout.write("refused\n");
  }
}
