import { ensureKafkaJars } from './kafka';

/**
 * `npm run kafka:jars`: copies the Kafka broker's jars from Maven Central into their cache folder unless a complete copy
 * is there already (.ci/run does it before the tests, so no test spends its time on the download), and prints that folder.
 */
console.log(await ensureKafkaJars());
