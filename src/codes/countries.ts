import { invalid } from '../errors.js';

/** ISO 3166-1 alpha-2: the 249 officially assigned codes. */
export const ISO_COUNTRIES: ReadonlySet<string> = new Set(
  (
    'AD AE AF AG AI AL AM AO AQ AR AS AT AU AW AX AZ BA BB BD BE BF BG BH BI BJ BL BM BN BO BQ BR BS BT BV BW BY BZ ' +
    'CA CC CD CF CG CH CI CK CL CM CN CO CR CU CV CW CX CY CZ DE DJ DK DM DO DZ EC EE EG EH ER ES ET FI FJ FK FM FO FR ' +
    'GA GB GD GE GF GG GH GI GL GM GN GP GQ GR GS GT GU GW GY HK HM HN HR HT HU ID IE IL IM IN IO IQ IR IS IT JE JM JO JP ' +
    'KE KG KH KI KM KN KP KR KW KY KZ LA LB LC LI LK LR LS LT LU LV LY MA MC MD ME MF MG MH MK ML MM MN MO MP MQ MR MS MT ' +
    'MU MV MW MX MY MZ NA NC NE NF NG NI NL NO NP NR NU NZ OM PA PE PF PG PH PK PL PM PN PR PS PT PW PY QA RE RO RS RU RW ' +
    'SA SB SC SD SE SG SH SI SJ SK SL SM SN SO SR SS ST SV SX SY SZ TC TD TF TG TH TJ TK TL TM TN TO TR TT TV TW TZ UA UG ' +
    'UM US UY UZ VA VC VE VG VI VN VU WF WS YE YT ZA ZM ZW'
  ).split(' '),
);

/**
 * European countries and territories (geographic Europe, with the Crown dependencies, Faroe,
 * Gibraltar, Åland and Svalbard): the residence countries the program serves (`countryCode`) and
 * the nationalities for which a national ID card (idnoType 1) is accepted.
 */
export const EUROPEAN_COUNTRIES: ReadonlySet<string> = new Set(
  (
    'AD AL AT AX BA BE BG BY CH CY CZ DE DK EE ES FI FO FR GB GG GI GR HR HU IE IM IS IT JE LI LT LU LV MC MD ME MK MT ' +
    'NL NO PL PT RO RS RU SE SI SJ SK SM UA VA'
  ).split(' '),
);

/** An acceptor's country, as a network sends it (optional): an assigned ISO 3166-1 alpha-2 code, else 1002. */
export function checkMerchantCountry(country: string | undefined): void {
  if (country !== undefined && !ISO_COUNTRIES.has(country)) {
    throw invalid('merchantCountry', 'must be an ISO 3166-1 alpha-2 country code, e.g. DE');
  }
}
