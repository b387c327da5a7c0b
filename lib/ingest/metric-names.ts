// Moves here from infra/ once the CDK work lands; infra will import it from lib so the function and the
// dashboards share one list.
export * from '../../infra/metric-names.js';
