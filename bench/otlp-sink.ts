/**
 * An OTLP/HTTP collector in a process of its own, for `turn-tracing.bench.ts`: the bench's spans are
 * decoded here, not on the event loop being timed. Prints `url <collector url>` once it listens, then
 * `spans <received so far>` every half second.
 */
import { FakeOtlpCollector } from '@ebb/testing/otlp';

const collector = await FakeOtlpCollector.start();
console.log(`url ${collector.url}`);
setInterval(() => console.log(`spans ${collector.spans.length}`), 500);
