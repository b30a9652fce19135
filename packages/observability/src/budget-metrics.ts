/**
 * Spend limits (`[budget]`): the limits channels reached, counted once per limit and period by the
 * replica that recorded it (so the series of all replicas sum to the limits reached), and every turn
 * a reached limit changed (a notice, no answer, the cheaper model), by what it did.
 */
import { BUDGET_OVER, type BudgetOver, type SpendPeriod, type SpendScope } from '@ebb/core';
import { Counter, type Registry } from 'prom-client';

export interface BudgetSample {
  readonly over: BudgetOver;
  readonly scope: SpendScope;
  readonly period: SpendPeriod;
  /** This replica recorded the limit reached (its period's first turn at it, across replicas). */
  readonly first: boolean;
}

export function budgetMetrics(registers: Registry[]): (sample: BudgetSample) => void {
  const reached = new Counter({
    name: 'ebb_budget_reached_total',
    help: 'Spend limits a channel reached ([budget]), once per channel, limit and period across replicas.',
    labelNames: ['scope', 'period', 'over'],
    registers,
  });
  const limited = new Counter({
    name: 'ebb_budget_limited_turns_total',
    help: 'Turns of a channel at a spend limit, by what the limit did: notice, cheaper_model or silent.',
    labelNames: ['over'],
    registers,
  });
  // Born at 0, every series: a series whose first sample is already 1 shows no increase, and the
  // alert on the first limit a process sees would stay quiet.
  for (const over of BUDGET_OVER) {
    limited.inc({ over }, 0);
    for (const scope of ['channel', 'workspace'] as const)
      for (const period of ['day', 'month'] as const) reached.inc({ scope, period, over }, 0);
  }
  return (sample) => {
    if (sample.first) reached.inc({ scope: sample.scope, period: sample.period, over: sample.over });
    limited.inc({ over: sample.over });
  };
}
