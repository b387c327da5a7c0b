import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

// Tests run on the Node major the Lambda function runs on (the `node` devDependency provides it).

const ROOT = join(import.meta.dirname, '..', '..');

describe('runtime', () => {
  it('is the same Node major as the Lambda runtime the stack deploys', () => {
    const stack = readFileSync(join(ROOT, 'infra', 'ingest-stack.ts'), 'utf8');
    const lambdaMajor = /Runtime\.NODEJS_(\d+)_X/.exec(stack)?.[1];
    expect(lambdaMajor).toBeDefined();
    expect(process.versions.node.split('.')[0]).toBe(lambdaMajor);
  });
});
