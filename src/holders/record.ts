import type { Selectable } from 'kysely';
import type { CardholdersTable } from '../db/schema.js';

/** The cardholder record of interface §2.2, as every operation returns it. */
export interface HolderRecord {
  holderId: string;
  auditStatus: number;
  errMsg: string;
  firstName: string;
  lastName: string;
  idno: string;
  idnoType: number;
  mobile: string;
}

export function toHolderRecord(row: Selectable<CardholdersTable>): HolderRecord {
  return {
    holderId: row.id,
    auditStatus: row.audit_status,
    errMsg: row.err_msg,
    firstName: row.first_name,
    lastName: row.last_name,
    idno: row.idno,
    idnoType: row.idno_type,
    mobile: row.mobile,
  };
}
