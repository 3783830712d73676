import { BlobServiceClient, StorageSharedKeyCredential } from "@azure/storage-blob";
const s = new BlobServiceClient("http://127.0.0.1:10999/devstoreaccount1", new StorageSharedKeyCredential("devstoreaccount1", "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="));
await s.getContainerClient(process.argv[2]).createIfNotExists();
console.log("ok");
