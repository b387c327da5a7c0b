import {
  S3BehaviourModel,
  type S3BehaviourOptions,
  type S3Decision,
  type S3RequestKind,
} from '../../../lib/local/s3-behaviour-model.js';
import { seededRandom } from '../../../lib/local/seeded-random.js';

/**
 * The S3 behaviour model plus a probabilistic `503 SlowDown` on a share of all requests. The model only
 * throttles through its per-prefix token buckets, whose SlowDown share depends on the offered load; the
 * issue asks for a fixed 10 %, so the dice are thrown here first and the model's own faults (500, reset,
 * stall) apply to what passes.
 */
export class SlowDownInjectingModel extends S3BehaviourModel {
  injectedSlowDowns = 0;
  requests = 0;
  readonly #rate: number;
  readonly #random: () => number;

  constructor(options: S3BehaviourOptions & { slowDownRate: number }) {
    const { slowDownRate, ...model } = options;
    super(model);
    this.#rate = slowDownRate;
    this.#random = seededRandom((options.seed ?? 1) + 7919);
  }

  override decide(kind: S3RequestKind, key: string): S3Decision {
    this.requests++;
    if (this.#random() < this.#rate) {
      this.injectedSlowDowns++;
      return { outcome: 'slowdown', latencyMs: 0 };
    }
    return super.decide(kind, key);
  }
}
