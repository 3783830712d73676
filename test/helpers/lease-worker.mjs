// A separate process holding a Redis lease: node lease-worker.mjs <redisUrl> <store> <name> <ttlMs>
// Prints "held" once it holds the lease (or "busy"), then waits to be killed.
import { RedisConnection, RedisShared } from "../../dist/storage/shared/redis.js";

const [url, store, name, ttl] = process.argv.slice(2);
const shared = new RedisShared(await RedisConnection.open({ url, store }));
const lease = await shared.tryLease(name, Number(ttl));
process.stdout.write(lease ? "held\n" : "busy\n");
setInterval(() => undefined, 1_000);
