import { createHash } from "node:crypto";
import { homedir } from "node:os";
import { join } from "node:path";
import { MmError } from "../errors.js";
import { maskSecrets } from "../secrets.js";

type Env = Record<string, string | undefined>;

/**
 * Where a store's data lives: a local directory, or a prefix in object storage (Azure Blob, S3,
 * GCS) that LanceDB reads and writes itself. `label` is how messages name it.
 */
export type StorePlace =
  | { kind: "local"; dir: string; label: string }
  | { kind: "object"; scheme: ObjectScheme; bucket: string; prefix: string; uri: string; label: string };

export type ObjectScheme = "az" | "s3" | "gs";

const SCHEMES: Record<ObjectScheme, { what: string; bucket: string }> = {
  az: { what: "Azure Blob Storage", bucket: "container" },
  s3: { what: "Amazon S3", bucket: "bucket" },
  gs: { what: "Google Cloud Storage", bucket: "bucket" },
};

/** True for `scheme://…`: a store location that is a URI, never a local path. */
export function isStoreUri(location: string): boolean {
  return /^[A-Za-z][A-Za-z0-9+.-]*:\/\//.test(location.trim());
}

/**
 * Reads a store location: a local directory (already absolute), or `az://CONTAINER/PREFIX`,
 * `s3://BUCKET/PREFIX`, `gs://BUCKET/PREFIX`. A URI mm can't use is a STORE_ERROR naming what is
 * wrong with it, never a local directory named after it.
 */
export function placeOf(location: string): StorePlace {
  if (!isStoreUri(location)) return { kind: "local", dir: location, label: location };
  const uri = location.trim();
  const scheme = uri.slice(0, uri.indexOf(":")).toLowerCase();
  if (!(scheme in SCHEMES)) {
    throw new MmError("STORE_ERROR", `mm can't use a store at ${uri}: the scheme ${scheme}:// is not supported. Use a local directory, az://CONTAINER/PREFIX, s3://BUCKET/PREFIX or gs://BUCKET/PREFIX.`);
  }
  const s = scheme as ObjectScheme;
  const rest = uri.slice(scheme.length + 3);
  if (/[?#]/.test(rest)) throw new MmError("STORE_ERROR", `mm can't use a store at ${uri}: a store URI takes no query or fragment (${SCHEMES[s].bucket} and prefix only).`);
  const [bucket, ...path] = rest.split("/");
  const noun = SCHEMES[s].bucket;
  if (!bucket) throw new MmError("STORE_ERROR", `mm can't use a store at ${uri}: it names no ${noun}. Write ${s}://${noun.toUpperCase()}/PREFIX.`);
  const problem = bucketProblem(s, bucket);
  if (problem) throw new MmError("STORE_ERROR", `mm can't use a store at ${uri}: the ${noun} name "${bucket}" ${problem}.`);
  const prefix = path.filter(Boolean).join("/");
  const normal = `${s}://${bucket}${prefix ? `/${prefix}` : ""}`;
  return { kind: "object", scheme: s, bucket, prefix, uri: normal, label: normal };
}

function bucketProblem(scheme: ObjectScheme, name: string): string | undefined {
  // Azure: 3–63 lowercase letters, digits and single hyphens, starting and ending with a letter or digit.
  if (scheme === "az" && !/^(?=.{3,63}$)[a-z0-9](?:[a-z0-9]|-(?=[a-z0-9]))*$/.test(name)) {
    return "is not a valid Azure container name (3–63 lowercase letters, digits and single hyphens)";
  }
  if (scheme !== "az" && !/^(?=.{3,63}$)[a-z0-9][a-z0-9._-]*[a-z0-9]$/.test(name)) return "is not a valid bucket name (3–63 lowercase letters, digits, dots and hyphens)";
  return undefined;
}

/**
 * LanceDB's storage options for an object store, from each cloud's standard environment variables
 * (lance's object_store keys: `azure_storage_account_name`, `aws_access_key_id`…). What is missing
 * is named by its variable. Retries are bounded so that an unreachable endpoint fails within
 * seconds, not after object_store's default 3 minutes.
 */
export function objectStorageOptions(place: Extract<StorePlace, { kind: "object" }>, env: Env): Record<string, string> {
  const get = (name: string) => (env[name]?.trim() ? env[name]!.trim() : undefined);
  const options: Record<string, string> = {
    client_max_retries: get("MM_STORE_MAX_RETRIES") ?? "3",
    client_retry_timeout: get("MM_STORE_RETRY_TIMEOUT_S") ?? "15",
    connect_timeout: "5s",
    // Lance retries a failed request again above object_store's own retries (its AIMD throttle,
    // lance-io's object_store/throttle.rs), and counts a refused connection as throttling: with
    // Azurite down, a query took 10.4 s to fail instead of 1.7 s. object_store's retries above
    // still cover throttling (429, 503) and other 5xx.
    lance_aimd_max_retries: get("MM_STORE_THROTTLE_RETRIES") ?? "0",
  };
  const missing = (names: string, why: string) =>
    new MmError("STORE_ERROR", `mm can't use the store at ${place.uri}: ${names} ${why}. mm reads ${SCHEMES[place.scheme].what} credentials from the environment.`);
  const set = (key: string, value: string | undefined) => {
    if (value !== undefined) options[key] = value;
  };
  if (place.scheme === "az") {
    const emulator = /^(1|true|yes)$/i.test(get("AZURE_STORAGE_USE_EMULATOR") ?? "");
    const account = get("AZURE_STORAGE_ACCOUNT_NAME") ?? (emulator ? "devstoreaccount1" : undefined);
    if (!account) throw missing("AZURE_STORAGE_ACCOUNT_NAME", "is not set");
    const key = get("AZURE_STORAGE_ACCOUNT_KEY");
    const other = get("AZURE_STORAGE_SAS_TOKEN") ?? get("AZURE_CLIENT_ID") ?? get("AZURE_FEDERATED_TOKEN_FILE");
    if (!key && !other && !emulator) throw missing("AZURE_STORAGE_ACCOUNT_KEY", "is not set (or AZURE_STORAGE_SAS_TOKEN, or a managed identity's AZURE_CLIENT_ID)");
    // Checked here: the object store's own refusal names a Rust source file and a byte offset.
    if (key && !/^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/.test(key)) {
      throw missing("AZURE_STORAGE_ACCOUNT_KEY", "is not base64: an account key is the 88 characters of letters, digits, + and / ending in == that the portal shows under Access keys");
    }
    set("azure_storage_account_name", account);
    set("azure_storage_account_key", key);
    set("azure_storage_sas_token", get("AZURE_STORAGE_SAS_TOKEN"));
    set("azure_client_id", get("AZURE_CLIENT_ID"));
    set("azure_federated_token_file", get("AZURE_FEDERATED_TOKEN_FILE"));
    set("azure_tenant_id", get("AZURE_TENANT_ID"));
    // LanceDB's object store, told to use the emulator, calls 127.0.0.1:10000 whatever the endpoint
    // says. With an endpoint, the endpoint wins: the emulator's account and well-known key, sent there.
    const endpoint = get("AZURE_STORAGE_ENDPOINT");
    if (emulator && !endpoint) set("azure_storage_use_emulator", "true");
    if (emulator && endpoint && !key && !other) set("azure_storage_account_key", EMULATOR_KEY);
    set("azure_endpoint", endpoint);
    set("allow_http", allowHttp(get("AZURE_STORAGE_ALLOW_HTTP"), get("AZURE_STORAGE_ENDPOINT")) ?? (emulator ? "true" : undefined));
  } else if (place.scheme === "s3") {
    const id = get("AWS_ACCESS_KEY_ID");
    const secret = get("AWS_SECRET_ACCESS_KEY");
    if (id && !secret) throw missing("AWS_SECRET_ACCESS_KEY", "is not set (AWS_ACCESS_KEY_ID is)");
    if (!id && !get("AWS_PROFILE") && !get("AWS_WEB_IDENTITY_TOKEN_FILE") && !get("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI") && !get("AWS_CONTAINER_CREDENTIALS_FULL_URI")) {
      throw missing("AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY", "are not set (nor AWS_PROFILE or a web identity)");
    }
    set("aws_access_key_id", id);
    set("aws_secret_access_key", secret);
    set("aws_session_token", get("AWS_SESSION_TOKEN"));
    set("aws_region", get("AWS_REGION") ?? get("AWS_DEFAULT_REGION"));
    set("aws_endpoint", get("AWS_ENDPOINT_URL"));
    set("allow_http", allowHttp(undefined, get("AWS_ENDPOINT_URL")));
  } else {
    const account = get("GOOGLE_SERVICE_ACCOUNT") ?? get("GOOGLE_APPLICATION_CREDENTIALS");
    const key = get("GOOGLE_SERVICE_ACCOUNT_KEY");
    if (!account && !key) throw missing("GOOGLE_SERVICE_ACCOUNT (or GOOGLE_APPLICATION_CREDENTIALS)", "is not set");
    set("google_service_account", get("GOOGLE_SERVICE_ACCOUNT"));
    set("google_application_credentials", get("GOOGLE_APPLICATION_CREDENTIALS"));
    set("google_service_account_key", key);
  }
  return options;
}

/** Azurite's and the Azure Storage Emulator's published development key (not a secret). */
const EMULATOR_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";
/** Where the object store goes with AZURE_STORAGE_USE_EMULATOR and no endpoint. */
const EMULATOR_ENDPOINT = "http://127.0.0.1:10000/devstoreaccount1 (the emulator's default address, AZURE_STORAGE_USE_EMULATOR)";

function allowHttp(flag: string | undefined, endpoint: string | undefined): string | undefined {
  if (flag !== undefined) return /^(1|true|yes)$/i.test(flag) ? "true" : "false";
  return endpoint?.startsWith("http://") ? "true" : undefined;
}

/** The secrets among storage options: masked out of every message that leaves the process. */
export function storageSecrets(options: Record<string, string>): string[] {
  return ["azure_storage_account_key", "azure_storage_sas_token", "aws_secret_access_key", "aws_session_token", "google_service_account_key"].map((k) => options[k]).filter((v): v is string => !!v);
}

/**
 * Where the processes of one machine coordinate for a store: locks, leases, the quota ledger,
 * the running server's address. A local store's own directory (as mm always did); for an object
 * store, a private directory of this machine named after the URI
 * (`$XDG_STATE_HOME/mm/stores/<hash>`, default `~/.local/state/mm/stores/<hash>`), so processes
 * on ONE machine agree. Replicas on several machines need Redis (`mm serve --redis`).
 */
export function coordinationDir(place: StorePlace, env: Env): string {
  if (place.kind === "local") return place.dir;
  const state = env.XDG_STATE_HOME?.trim() ? env.XDG_STATE_HOME : join(env.HOME || homedir(), ".local", "state");
  const hash = createHash("sha256").update(place.uri).digest("hex").slice(0, 16);
  return join(state, "mm", "stores", hash);
}

/**
 * An object-store failure as the person can act on it: the container is missing (mm does not
 * create containers), the credentials were refused, the endpoint can't be reached. Anything else
 * keeps LanceDB's own first line, with every secret masked.
 */
export function objectStoreError(err: unknown, place: Extract<StorePlace, { kind: "object" }>, options: Record<string, string>): MmError {
  if (err instanceof MmError) return err;
  const raw = err instanceof Error ? err.message : String(err);
  const noun = SCHEMES[place.scheme].bucket;
  // The address the object store really called: the emulator's default one when told to use it.
  const endpoint = options.azure_endpoint ?? options.aws_endpoint ?? (options.azure_storage_use_emulator ? EMULATOR_ENDPOINT : SCHEMES[place.scheme].what);
  const detail = () => ` (${maskSecrets(raw.split("\n")[0].slice(0, 300), storageSecrets(options))})`;
  let message: string;
  if (/status: 404|ContainerNotFound|NoSuchBucket|bucket.*not found/i.test(raw)) {
    message = `the ${noun} "${place.bucket}" does not exist at ${endpoint}. Create it first; mm does not create ${noun}s.`;
  } else if (/status: 40[13]|AuthenticationFailed|AccessDenied|InvalidAccessKeyId|SignatureDoesNotMatch|Forbidden/i.test(raw)) {
    message = `${endpoint} refused the credentials (${credentialNames(place.scheme)}).`;
  } else if (/error sending request|connect|timed out|dns error|Connection refused|tcp/i.test(raw)) {
    message = `${endpoint} can't be reached.`;
  } else {
    // Unrecognised: LanceDB's own words, first line, secrets masked.
    message = `the object store failed${detail()}.`;
  }
  return new MmError("STORE_ERROR", `mm can't use the store at ${place.uri}: ${message}`, {}, { cause: err });
}

function credentialNames(scheme: ObjectScheme): string {
  return scheme === "az" ? "check AZURE_STORAGE_ACCOUNT_NAME and AZURE_STORAGE_ACCOUNT_KEY" : scheme === "s3" ? "check AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY" : "check GOOGLE_SERVICE_ACCOUNT";
}
