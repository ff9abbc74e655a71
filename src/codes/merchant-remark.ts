/**
 * A record's remark when none is given (interface §2.1: "transaction merchant description"): the
 * acceptor's name and city, as a statement shows them ("Corner Grocery, Berlin"); empty without
 * either. The link (field 43, `card-network/amounts.ts`) and the sandbox's authorize (`merchantName`,
 * `merchantCity`) both derive it here, so the 4.1 list shows the merchant the same way.
 */
export function merchantRemark(acceptor: { merchantName?: string | undefined; merchantCity?: string | undefined }): string {
  return [acceptor.merchantName, acceptor.merchantCity].filter((p): p is string => p !== undefined && p !== '').join(', ');
}
