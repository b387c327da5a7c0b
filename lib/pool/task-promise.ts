// How the pool settles a caller's promise with one function: a task keeps only `resolve`, and a rejection
// goes through it as a rejecting thenable, so no reject function is kept per queued task.
import { noop, type Task } from './task-state.js';

let capturedResolve: (value: unknown) => void = noop;
// One shared executor: `new Promise(capture)` allocates no closure per task.
const capture = (resolve: (value: unknown) => void): void => {
  capturedResolve = resolve;
};

/** Gives `task` its caller's promise (returned) and that promise's resolve function. */
export function attachPromise(task: Task): Promise<unknown> {
  const promise = new Promise(capture);
  task.resolve = capturedResolve;
  task.promise = promise;
  return promise;
}

/** What `resolve(rejectingThenable(error))` rejects the promise with. */
function rejectingThenable(error: unknown): PromiseLike<never> {
  return {
    // biome-ignore lint/suspicious/noThenProperty: a thenable is the point: resolve() adopts its rejection.
    then(_onFulfilled, onRejected) {
      // resolve() always passes onRejected to a thenable.
      onRejected!(error);
      return undefined as never;
    },
  };
}

/** A promise rejected with `error`, already marked handled (a caller that ignores it does not crash). */
export function rejected<T>(error: unknown): Promise<T> {
  const promise = Promise.reject(error);
  promise.catch(noop);
  return promise;
}

/** Rejects `task`'s caller with `error` through its one resolve function. */
export function rejectTask(task: Task, error: unknown): void {
  // Marked handled first: a caller that ignores the promise must not crash the process. Callers that
  // await it still get the rejection.
  // Every task gets its promise in enqueue, before it can fail.
  task.promise!.catch(noop);
  task.resolve(rejectingThenable(error));
}
