// undici's index loads fetch, WebSocket, the cache and mock layers with its Agent: 535 KB in a minified
// bundle, where the Agent and its request API alone take 286 KB. `undici-http-handler.ts` imports those two
// modules directly; these declarations give them undici's own published types.
declare module 'undici/lib/dispatcher/agent.js' {
  import type { Agent } from 'undici';

  const AgentClass: typeof Agent;
  export default AgentClass;
}

declare module 'undici/lib/api/api-request.js' {
  import type { Dispatcher } from 'undici';

  /** `Dispatcher.prototype.request`, called with the dispatcher as `this`, in its callback form. */
  function request(
    this: Dispatcher,
    options: Dispatcher.RequestOptions,
    callback: (error: Error | null, data: Dispatcher.ResponseData) => void,
  ): void;
  export default request;
}
