// The AWS SDK's retry loop (the v2 retry-strategy branch of @smithy/core's retryMiddleware), around an
// in-process call instead of an HTTP request: acquire a token (the adaptive strategy's client-side rate
// limiter waits here), send, record success or refresh the token with the error's class (the adaptive
// strategy feeds throttles to its CUBIC rate), sleep the delay, try again; give up when refused.
import { isServerError, isThrottlingError, isTransientError } from '@smithy/core/retry';
import type { RetryErrorInfo, RetryErrorType, RetryStrategyV2, RetryToken } from '@smithy/types';

function errorType(error: unknown): RetryErrorType {
  const e = error as Parameters<typeof isThrottlingError>[0];
  if (isThrottlingError(e)) return 'THROTTLING';
  if (isTransientError(e)) return 'TRANSIENT';
  if (isServerError(e)) return 'SERVER_ERROR';
  return 'CLIENT_ERROR';
}

export async function sdkSend<T>(
  strategy: RetryStrategyV2,
  send: () => Promise<T>,
  onRetry: () => void,
): Promise<T> {
  let token: RetryToken = await strategy.acquireInitialRetryToken('');
  for (;;) {
    try {
      const result = await send();
      strategy.recordSuccess(token);
      return result;
    } catch (error) {
      const info: RetryErrorInfo = { error: error as RetryErrorInfo['error'], errorType: errorType(error) };
      token = await strategy.refreshRetryTokenForRetry(token, info).catch(() => {
        throw error;
      });
      onRetry();
      const delay = token.getRetryDelay();
      if (delay > 0) await new Promise((resolve) => setTimeout(resolve, delay));
    }
  }
}
