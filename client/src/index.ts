export { CardProgram, type ClientOptions, newRandomStr, type RequestKind, type RetryInfo, retryDelay, VERSION } from './client.js';
export * from './errors.js';
export type {
  CreateDisputeParams,
  DisputeEvidenceFile,
  DisputeListParams,
  DisputePageParams,
  DisputeReason,
  DisputeStatus,
  UpdateDisputeParams,
} from './resources/disputes.js';
export type { CreateHolderParams } from './resources/holders.js';
export type { KycShareParams } from './resources/kyc.js';
export type { SandboxTrade } from './resources/sandbox.js';
export type {
  ThreeDsChallengeRespondParams,
  ThreeDsListParams,
  ThreeDsPageParams,
  ThreeDsSettingsParams,
} from './resources/three-ds.js';
export type {
  TokenActionParams,
  TokenAuthMethod,
  TokenListParams,
  TokenPageParams,
  TokenSettingsParams,
  WalletTokenStatus,
} from './resources/tokens.js';
export { MAX_WINDOW_DAYS, type TradeListParams, type TradePageParams } from './resources/trades.js';
export { Webhooks } from './resources/webhooks.js';
export { type Credentials, canonicalJson, signature, signingString } from './signing.js';
export * from './types.js';
