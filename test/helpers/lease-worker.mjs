// A separate process holding a Redis lease or lock: node lease-worker.mjs <redisUrl> <store> <lease|lock> <name> <ttlMs>
// Prints "held" once it holds it (or "busy"), then waits to be killed.
import { RedisConnection, RedisShared } from "../../dist/storage/shared/redis.js";

const [url, store, kind, name, ttl] = process.argv.slice(2);
const shared = new RedisShared(await RedisConnection.open({ url, store }));
if (kind === "lock") {
  void shared.withLock(name, () => new Promise(() => process.stdout.write("held\n")), { staleMs: Number(ttl) });
} else {
  const lease = await shared.tryLease(name, Number(ttl));
  process.stdout.write(lease ? "held\n" : "busy\n");
}
setInterval(() => undefined, 1_000);
