import { randomBytes } from 'node:crypto';

/**
 * The challenge page's HTML (decisions §14.4): the merchant's name, the amount and the masked card
 * number, in the browser's language (English, German, French, Spanish, Italian), fitting the CReq's
 * window size, with nothing loaded from elsewhere: its style and its one line of script (the CRes's
 * auto-submit) inline under a per-answer nonce. Accessible: every field labelled, the first field
 * focused, errors announced (role=alert, aria-live). Pure: the routes (./routes-challenge.ts) give it
 * what to show.
 */

export const LANGUAGES = ['en', 'de', 'fr', 'es', 'it'] as const;
export type Language = (typeof LANGUAGES)[number];

/** The page's language from a BCP 47 tag (the AReq's browserLanguage) or an Accept-Language header: its first known one, else English. */
export function languageOf(...tags: Array<string | null | undefined>): Language {
  for (const tag of tags) {
    if (!tag) continue;
    for (const part of tag.split(',')) {
      const primary = part.trim().split(/[-_;]/)[0]?.toLowerCase();
      if ((LANGUAGES as readonly string[]).includes(primary ?? '')) return primary as Language;
    }
  }
  return 'en';
}

interface Strings {
  title: string;
  merchant: string;
  amount: string;
  card: string;
  otpIntro: string;
  codeLabel: string;
  codeHint: string;
  submit: string;
  resend: string;
  cancel: string;
  wrong: (left: number) => string;
  codeExpired: string;
  resent: string;
  noMoreCodes: string;
  oobIntro: string;
  waiting: string;
  checkNow: string;
  doneTitle: string;
  doneText: string;
  continue: string;
  errorTitle: string;
  spent: string;
  unknown: string;
  busy: string;
}

const STRINGS: Record<Language, Strings> = {
  en: {
    title: 'Confirm your payment',
    merchant: 'Merchant',
    amount: 'Amount',
    card: 'Card',
    otpIntro: 'Enter the 6-digit code we sent you to confirm this payment.',
    codeLabel: 'Code',
    codeHint: '6 digits',
    submit: 'Confirm',
    resend: 'Send a new code',
    cancel: 'Cancel',
    wrong: (n) => `This code is not right. Tries left: ${n}.`,
    codeExpired: 'This code has expired. Ask for a new one.',
    resent: 'A new code is on its way.',
    noMoreCodes: 'No more new codes can be sent.',
    oobIntro: 'Open your banking app and confirm this payment there.',
    waiting: 'Waiting for your confirmation…',
    checkNow: 'I have confirmed',
    doneTitle: 'Returning to the shop',
    doneText: 'The authentication is over. If nothing happens, press Continue.',
    continue: 'Continue',
    errorTitle: 'This payment cannot be confirmed here',
    spent: 'This authentication has already been used or has ended. Go back to the shop and try again.',
    unknown: 'This request is not valid. Go back to the shop and try again.',
    busy: 'The service is not available just now. Please try again in a moment.',
  },
  de: {
    title: 'Zahlung bestätigen',
    merchant: 'Händler',
    amount: 'Betrag',
    card: 'Karte',
    otpIntro: 'Geben Sie den 6-stelligen Code ein, den wir Ihnen gesendet haben, um diese Zahlung zu bestätigen.',
    codeLabel: 'Code',
    codeHint: '6 Ziffern',
    submit: 'Bestätigen',
    resend: 'Neuen Code senden',
    cancel: 'Abbrechen',
    wrong: (n) => `Dieser Code ist nicht richtig. Verbleibende Versuche: ${n}.`,
    codeExpired: 'Dieser Code ist abgelaufen. Fordern Sie einen neuen an.',
    resent: 'Ein neuer Code ist unterwegs.',
    noMoreCodes: 'Es können keine weiteren Codes gesendet werden.',
    oobIntro: 'Öffnen Sie Ihre Banking-App und bestätigen Sie dort diese Zahlung.',
    waiting: 'Warten auf Ihre Bestätigung…',
    checkNow: 'Ich habe bestätigt',
    doneTitle: 'Zurück zum Shop',
    doneText: 'Die Authentifizierung ist abgeschlossen. Falls nichts passiert, drücken Sie Weiter.',
    continue: 'Weiter',
    errorTitle: 'Diese Zahlung kann hier nicht bestätigt werden',
    spent: 'Diese Authentifizierung wurde bereits verwendet oder ist beendet. Kehren Sie zum Shop zurück und versuchen Sie es erneut.',
    unknown: 'Diese Anfrage ist ungültig. Kehren Sie zum Shop zurück und versuchen Sie es erneut.',
    busy: 'Der Dienst ist gerade nicht verfügbar. Bitte versuchen Sie es gleich noch einmal.',
  },
  fr: {
    title: 'Confirmez votre paiement',
    merchant: 'Commerçant',
    amount: 'Montant',
    card: 'Carte',
    otpIntro: 'Saisissez le code à 6 chiffres que nous vous avons envoyé pour confirmer ce paiement.',
    codeLabel: 'Code',
    codeHint: '6 chiffres',
    submit: 'Confirmer',
    resend: 'Envoyer un nouveau code',
    cancel: 'Annuler',
    wrong: (n) => `Ce code n’est pas correct. Essais restants : ${n}.`,
    codeExpired: 'Ce code a expiré. Demandez-en un nouveau.',
    resent: 'Un nouveau code est en route.',
    noMoreCodes: 'Aucun autre code ne peut être envoyé.',
    oobIntro: 'Ouvrez votre application bancaire et confirmez-y ce paiement.',
    waiting: 'En attente de votre confirmation…',
    checkNow: 'J’ai confirmé',
    doneTitle: 'Retour à la boutique',
    doneText: 'L’authentification est terminée. Si rien ne se passe, appuyez sur Continuer.',
    continue: 'Continuer',
    errorTitle: 'Ce paiement ne peut pas être confirmé ici',
    spent: 'Cette authentification a déjà été utilisée ou est terminée. Retournez à la boutique et réessayez.',
    unknown: 'Cette demande n’est pas valide. Retournez à la boutique et réessayez.',
    busy: 'Le service n’est pas disponible pour le moment. Veuillez réessayer dans un instant.',
  },
  es: {
    title: 'Confirme su pago',
    merchant: 'Comercio',
    amount: 'Importe',
    card: 'Tarjeta',
    otpIntro: 'Introduzca el código de 6 dígitos que le hemos enviado para confirmar este pago.',
    codeLabel: 'Código',
    codeHint: '6 dígitos',
    submit: 'Confirmar',
    resend: 'Enviar un código nuevo',
    cancel: 'Cancelar',
    wrong: (n) => `Este código no es correcto. Intentos restantes: ${n}.`,
    codeExpired: 'Este código ha caducado. Solicite uno nuevo.',
    resent: 'Le hemos enviado un código nuevo.',
    noMoreCodes: 'No se pueden enviar más códigos.',
    oobIntro: 'Abra la aplicación de su banco y confirme allí este pago.',
    waiting: 'Esperando su confirmación…',
    checkNow: 'Ya lo he confirmado',
    doneTitle: 'Volviendo a la tienda',
    doneText: 'La autenticación ha terminado. Si no ocurre nada, pulse Continuar.',
    continue: 'Continuar',
    errorTitle: 'Este pago no se puede confirmar aquí',
    spent: 'Esta autenticación ya se ha utilizado o ha terminado. Vuelva a la tienda e inténtelo de nuevo.',
    unknown: 'Esta solicitud no es válida. Vuelva a la tienda e inténtelo de nuevo.',
    busy: 'El servicio no está disponible en este momento. Inténtelo de nuevo en unos instantes.',
  },
  it: {
    title: 'Conferma il pagamento',
    merchant: 'Esercente',
    amount: 'Importo',
    card: 'Carta',
    otpIntro: 'Inserisci il codice di 6 cifre che ti abbiamo inviato per confermare questo pagamento.',
    codeLabel: 'Codice',
    codeHint: '6 cifre',
    submit: 'Conferma',
    resend: 'Invia un nuovo codice',
    cancel: 'Annulla',
    wrong: (n) => `Questo codice non è corretto. Tentativi rimasti: ${n}.`,
    codeExpired: 'Questo codice è scaduto. Richiedine uno nuovo.',
    resent: 'Un nuovo codice è in arrivo.',
    noMoreCodes: 'Non è possibile inviare altri codici.',
    oobIntro: 'Apri l’app della tua banca e conferma lì questo pagamento.',
    waiting: 'In attesa della tua conferma…',
    checkNow: 'Ho confermato',
    doneTitle: 'Ritorno al negozio',
    doneText: 'L’autenticazione è terminata. Se non succede nulla, premi Continua.',
    continue: 'Continua',
    errorTitle: 'Questo pagamento non può essere confermato qui',
    spent: 'Questa autenticazione è già stata usata o è terminata. Torna al negozio e riprova.',
    unknown: 'Questa richiesta non è valida. Torna al negozio e riprova.',
    busy: 'Il servizio non è disponibile al momento. Riprova tra poco.',
  },
};

export const stringsOf = (lang: Language): Strings => STRINGS[lang];

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
export const esc = (s: string) => s.replace(/[&<>"']/g, (c) => ESCAPES[c] ?? c);

/** CReq challengeWindowSize → the page's box (01 250×400, 02 390×400, 03 500×600, 04 600×400, 05 full page). */
const WINDOWS: Record<string, { width: string; height: string; scale: string }> = {
  '01': { width: '250px', height: '400px', scale: 'small' },
  '02': { width: '390px', height: '400px', scale: 'small' },
  '03': { width: '500px', height: '600px', scale: 'medium' },
  '04': { width: '600px', height: '400px', scale: 'wide' },
  '05': { width: '100%', height: '100%', scale: 'full' },
};

/** A fresh nonce for one answer's inline style and script. */
export const newNonce = () => randomBytes(16).toString('base64');

const STYLE = `
*{box-sizing:border-box}
html,body{margin:0;padding:0;background:#fff;color:#1a1a1a;font:15px/1.4 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif}
main{margin:0 auto;padding:16px;overflow:auto}
h1{font-size:1.2em;margin:0 0 10px}
dl{display:grid;grid-template-columns:auto 1fr;gap:2px 10px;margin:0 0 12px;font-size:.95em}
dt{color:#555}dd{margin:0;font-weight:600;word-break:break-word}
p{margin:0 0 10px}
label{display:block;font-weight:600;margin-bottom:4px}
input[type=text]{width:100%;max-width:14em;font-size:1.3em;letter-spacing:.15em;padding:6px 8px;border:2px solid #555;border-radius:4px}
input:focus,button:focus{outline:3px solid #0b5fff;outline-offset:2px}
.hint{color:#555;font-size:.85em;margin:2px 0 10px}
button{font:inherit;padding:8px 14px;border-radius:4px;border:2px solid #0b3d91;background:#0b3d91;color:#fff;cursor:pointer;margin:0 6px 8px 0}
button.secondary{background:#fff;color:#0b3d91}
.row{display:flex;flex-wrap:wrap;align-items:center}
.alert{border-left:4px solid #b00020;background:#fdecee;padding:6px 10px;margin:0 0 10px}
.note{border-left:4px solid #0b5fff;background:#eef3ff;padding:6px 10px;margin:0 0 10px}
.small{font-size:13px}.small main{padding:8px}.small h1{font-size:1.05em}.small dl{grid-template-columns:1fr}.small dd{margin-bottom:4px}
.small button{padding:6px 8px;margin:0 4px 6px 0}
.wide dl{grid-template-columns:auto 1fr auto 1fr}
`;

interface Frame {
  lang: Language;
  windowSize: string;
  nonce: string;
  title: string;
  body: string;
  /** An out-of-band wait refreshes itself (a meta refresh: no script needed). */
  refresh?: { seconds: number; url: string };
  script?: string;
}

function frame(f: Frame): string {
  const w = WINDOWS[f.windowSize] ?? WINDOWS['05'];
  const box = w ? `main{width:${w.width};max-width:100%;min-height:${w.scale === 'full' ? 'auto' : w.height}}` : '';
  return `<!doctype html>
<html lang="${f.lang}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width,initial-scale=1">
<meta name="referrer" content="no-referrer">
${f.refresh ? `<meta http-equiv="refresh" content="${f.refresh.seconds};url=${esc(f.refresh.url)}">` : ''}
<title>${esc(f.title)}</title>
<style nonce="${f.nonce}">${STYLE}${box}</style>
</head>
<body class="${w?.scale ?? 'full'}">
<main>
${f.body}
</main>
${f.script ? `<script nonce="${f.nonce}">${f.script}</script>` : ''}
</body>
</html>`;
}

export interface Purchase {
  merchantName: string | null;
  /** Formatted in the page's language, e.g. "120,00 €". */
  amount: string | null;
  cardNo: string;
}

/** An amount in minor units, formatted for the page's language. */
export function formatAmount(lang: Language, minor: number | null, exponent: number | null, currency: string | null): string | null {
  if (minor === null || currency === null) return null;
  const value = minor / 10 ** (exponent ?? 2);
  try {
    return new Intl.NumberFormat(lang, { style: 'currency', currency, minimumFractionDigits: exponent ?? 2 }).format(value);
  } catch {
    return `${value.toFixed(exponent ?? 2)} ${currency}`;
  }
}

function purchaseList(s: Strings, p: Purchase): string {
  return `<dl>
${p.merchantName ? `<dt>${esc(s.merchant)}</dt><dd>${esc(p.merchantName)}</dd>` : ''}
${p.amount ? `<dt>${esc(s.amount)}</dt><dd>${esc(p.amount)}</dd>` : ''}
<dt>${esc(s.card)}</dt><dd>${esc(p.cardNo.replace(/\*+/g, ' •••• '))}</dd>
</dl>`;
}

const hidden = (name: string, value: string) => `<input type="hidden" name="${name}" value="${esc(value)}">`;

export type Notice = 'wrong' | 'codeExpired' | 'resent' | 'noMoreCodes' | 'waiting';

export interface ChallengeView {
  lang: Language;
  windowSize: string;
  nonce: string;
  purchase: Purchase;
  acsTransID: string;
  token: string;
  notice?: Notice;
  attemptsLeft: number;
  resendsLeft: number;
}

function noticeHtml(s: Strings, v: ChallengeView): string {
  // The live region is always there (empty or not), so a screen reader announces what appears in it.
  const text =
    v.notice === 'wrong'
      ? s.wrong(v.attemptsLeft)
      : v.notice === 'codeExpired'
        ? s.codeExpired
        : v.notice === 'noMoreCodes'
          ? s.noMoreCodes
          : v.notice === 'resent'
            ? s.resent
            : '';
  const error = v.notice === 'wrong' || v.notice === 'codeExpired' || v.notice === 'noMoreCodes';
  return `<div id="status" role="${error ? 'alert' : 'status'}" aria-live="${error ? 'assertive' : 'polite'}"${text ? ` class="${error ? 'alert' : 'note'}"` : ''}>${esc(text)}</div>`;
}

/** The one-time code's form: the code, confirm; a new code; cancel. */
export function otpPage(v: ChallengeView): string {
  const s = STRINGS[v.lang];
  const ids = hidden('acsTransID', v.acsTransID) + hidden('token', v.token);
  const wrong = v.notice === 'wrong' || v.notice === 'codeExpired';
  const body = `<h1 id="title">${esc(s.title)}</h1>
${purchaseList(s, v.purchase)}
${noticeHtml(s, v)}
<form method="post" action="/3ds/challenge/otp" aria-labelledby="title">
${ids}
<p id="intro">${esc(s.otpIntro)}</p>
<label for="code">${esc(s.codeLabel)}</label>
<input type="text" id="code" name="code" inputmode="numeric" autocomplete="one-time-code" pattern="[0-9 ]{6,7}" maxlength="7" required autofocus aria-describedby="intro hint"${wrong ? ' aria-invalid="true" aria-errormessage="status"' : ''}>
<div class="hint" id="hint">${esc(s.codeHint)}</div>
<div class="row"><button type="submit">${esc(s.submit)}</button></div>
</form>
<div class="row">
${v.resendsLeft > 0 ? `<form method="post" action="/3ds/challenge/resend">${ids}<button type="submit" class="secondary">${esc(s.resend)}</button></form>` : ''}
<form method="post" action="/3ds/challenge/cancel">${ids}<button type="submit" class="secondary">${esc(s.cancel)}</button></form>
</div>`;
  return frame({ lang: v.lang, windowSize: v.windowSize, nonce: v.nonce, title: s.title, body });
}

/** The out-of-band wait: confirm in the app; the page asks again every few seconds (a meta refresh), or when told; cancel. */
export function oobPage(v: ChallengeView): string {
  const s = STRINGS[v.lang];
  const ids = hidden('acsTransID', v.acsTransID) + hidden('token', v.token);
  const query = new URLSearchParams({ acsTransID: v.acsTransID, token: v.token }).toString();
  const body = `<h1 id="title">${esc(s.title)}</h1>
${purchaseList(s, v.purchase)}
<p>${esc(s.oobIntro)}</p>
<div id="status" role="status" aria-live="polite" class="note">${esc(s.waiting)}</div>
<div class="row">
<form method="post" action="/3ds/challenge/status">${ids}<button type="submit" autofocus>${esc(s.checkNow)}</button></form>
<form method="post" action="/3ds/challenge/cancel">${ids}<button type="submit" class="secondary">${esc(s.cancel)}</button></form>
</div>`;
  return frame({
    lang: v.lang,
    windowSize: v.windowSize,
    nonce: v.nonce,
    title: s.title,
    body,
    refresh: { seconds: 3, url: `/3ds/challenge/status?${query}` },
  });
}

/**
 * The end: the CRes posted to the 3DS Server's notificationURL by a form that submits itself (one
 * inline line under the nonce), with a button for a browser without script.
 */
export function cresPage(p: {
  lang: Language;
  windowSize: string;
  nonce: string;
  notificationURL: string;
  cres: string;
  sessionData: string | null;
}): string {
  const s = STRINGS[p.lang];
  const body = `<h1>${esc(s.doneTitle)}</h1>
<p role="status" aria-live="polite">${esc(s.doneText)}</p>
<form id="cres" method="post" action="${esc(p.notificationURL)}">
${hidden('cres', p.cres)}
${p.sessionData !== null ? hidden('threeDSSessionData', p.sessionData) : ''}
<button type="submit">${esc(s.continue)}</button>
</form>`;
  return frame({
    lang: p.lang,
    windowSize: p.windowSize,
    nonce: p.nonce,
    title: s.doneTitle,
    body,
    script: 'document.getElementById("cres").submit();',
  });
}

/** An error: a spent, unknown or expired creq, a form that is not the page's, the database away. */
export function errorPage(p: { lang: Language; windowSize?: string; nonce: string; what: 'spent' | 'unknown' | 'busy' }): string {
  const s = STRINGS[p.lang];
  const body = `<h1>${esc(s.errorTitle)}</h1>
<p role="alert">${esc(s[p.what])}</p>`;
  return frame({ lang: p.lang, windowSize: p.windowSize ?? '05', nonce: p.nonce, title: s.errorTitle, body });
}
