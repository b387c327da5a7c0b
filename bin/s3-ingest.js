#!/usr/bin/env node
// Runs the TypeScript CLI through tsx's ESM loader, so `npx s3-ingest` works in the repository unbuilt.
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../lib/cli/main.ts');
process.exitCode = await main(process.argv.slice(2));
