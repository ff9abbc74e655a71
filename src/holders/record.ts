import type { Static } from 'typebox';
import type { HolderRecordSchema } from './schemas.js';

/** The cardholder record of interface §2.2, as every operation returns it (built by identity.ts holderRecord). */
export type HolderRecord = Static<typeof HolderRecordSchema>;
