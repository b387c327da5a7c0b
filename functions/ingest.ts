// Placeholder entry point so the CDK app can bundle a function before the ingestion pipeline lands.
// The ingestion issue replaces this with the middy + Powertools handler over lib/ingest.
export const handler = async (): Promise<{ batchItemFailures: { itemIdentifier: string }[] }> => ({
  batchItemFailures: [],
});
