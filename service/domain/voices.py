"""Voice profiles (SPEC 14): the premade ones the speech engines offer, and owners' own (made by
the clone task, `service.domain.cloning`). Agents and sessions name one by id; `voice_for` says
how a conversation speaks.

A voice id stored before profiles existed, or whose profile was deleted since, speaks with the
default premade voice: such ids keep working. New ids given to agents and sessions must name a
profile the owner can use."""

from __future__ import annotations

from dataclasses import dataclass

from service.domain.context import Context
from service.domain.errors import Forbidden, NotFound, UrlExpired, ValidationFailed
from service.domain.models import VoiceProfile
from service.domain.ownership import require_owned
from service.domain.signing import signed_path, verified_expiry
from service.domain.speech import PremadeVoice, Voice

# Premade profiles were not made by anyone at any time; they show this fixed date.
PREMADE_CREATED_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z
READY = "READY"
# The path of a profile's sample clip link (signed: players fetch it without an API key).
SAMPLE_PATH = "/voice/samples/{profile_id}/sample.wav"
WHERE_THE_LIST_IS = "see GET /v1/voice/premade_profiles and GET /v1/voice/profiles"
# What a sample clip says, by the profile's first language.
_SAMPLE_TEXT = {
    "en": "Hello! This is how I sound. I hope you enjoy talking with me.",
    "fr": "Bonjour ! Voici ma voix. J'espère que vous aimerez parler avec moi.",
    "de": "Hallo! So klingt meine Stimme. Ich freue mich auf unser Gespräch.",
    "es": "¡Hola! Así suena mi voz. Espero que disfrutes hablar conmigo.",
    "zh": "你好！这就是我的声音。希望你喜欢和我聊天。",
}


@dataclass(frozen=True)
class Profile:
    """A profile as the API shows it, premade (`owner_id` None) or an owner's."""

    profile_id: str
    name: str
    description: str | None
    languages: tuple[str, ...]
    owner_id: str | None
    created_ms: int
    voice: Voice

    @property
    def is_premade(self) -> bool:
        return self.owner_id is None

    @property
    def status(self) -> str:
        return READY  # a profile exists only once its clone task has completed


def _premade(voice: PremadeVoice) -> Profile:
    return Profile(
        voice.id, voice.name, voice.description, voice.languages, None, PREMADE_CREATED_MS,
        voice.voice,
    )  # fmt: skip


def _owned(profile: VoiceProfile) -> Profile:
    voice = Voice(profile.engine, profile.voice, profile.pitch, profile.pitch_range, profile.rate)
    return Profile(
        profile.profile_id, profile.name, profile.description, profile.languages,
        profile.owner_id, profile.created_ms, voice,
    )  # fmt: skip


def premade_profiles(ctx: Context) -> list[Profile]:
    """The premade profiles; the first is the default voice."""
    return [_premade(voice) for voice in ctx.speech.premade()]


def default_profile(ctx: Context) -> Profile:
    return _premade(ctx.speech.default())


async def owned_profiles(ctx: Context, owner_id: str) -> list[Profile]:
    return [_owned(profile) for profile in await ctx.store.list_voice_profiles(owner_id)]


def _find_premade(ctx: Context, profile_id: str) -> Profile | None:
    return next((p for p in premade_profiles(ctx) if p.profile_id == profile_id), None)


async def get_profile(ctx: Context, owner_id: str, profile_id: str) -> Profile:
    """A premade profile or one of the owner's; NotFound otherwise."""
    premade = _find_premade(ctx, profile_id)
    if premade is not None:
        return premade
    stored = await ctx.store.get_voice_profile(profile_id)
    return _owned(require_owned(stored, owner_id, "voice profile", profile_id))


async def delete_profile(ctx: Context, owner_id: str, profile_id: str) -> None:
    """Delete one of the owner's profiles; its agents and sessions move to the default voice.
    Premade profiles cannot be deleted (Forbidden)."""
    if _find_premade(ctx, profile_id) is not None:
        raise Forbidden(
            f"Voice profile {profile_id!r} is premade; premade profiles cannot be deleted."
        )
    deleted = await ctx.store.delete_voice_profile(
        owner_id, profile_id, default_profile(ctx).profile_id
    )
    if deleted is None:
        raise NotFound(f"No voice profile {profile_id!r}.")


async def usable_profile(ctx: Context, owner_id: str, voice_id: str, field: str) -> Profile:
    """The profile a voice id given in a body (`field`) names; ValidationFailed naming the
    field and where the lists are when the owner has no such profile."""
    try:
        return await get_profile(ctx, owner_id, voice_id)
    except NotFound:
        message = f"no voice profile of yours or premade one has this id ({WHERE_THE_LIST_IS})"
        raise ValidationFailed.field(field, message) from None


async def check_voice_ref(ctx: Context, owner_id: str, voice_id: str | None, field: str) -> None:
    """A voice id given to an agent or a session names a profile the owner can use."""
    if voice_id is not None:
        await usable_profile(ctx, owner_id, voice_id, field)


async def voice_for(ctx: Context, owner_id: str, voice_id: str | None) -> Voice:
    """How a conversation with this voice id speaks: its profile's voice, or the default
    voice when it names none, or a profile that is gone or never existed."""
    if voice_id is not None:
        try:
            return (await get_profile(ctx, owner_id, voice_id)).voice
        except NotFound:
            pass
    return default_profile(ctx).voice


def sample_link(ctx: Context, profile: Profile) -> str:
    """A signed path (with query) to the profile's sample clip, valid for AVATAR_URL_TTL_S."""
    expires_s = (ctx.clock.now_ms() + round(ctx.settings.url_ttl_s * 1000)) // 1000
    path = SAMPLE_PATH.format(profile_id=profile.profile_id)
    return signed_path(ctx.signing_key, path, expires_s)


async def sample_clip(
    ctx: Context, profile_id: str, expires: str | None, signature: str | None
) -> tuple[bytes, int]:
    """(16-bit mono PCM, sample rate) of the sample clip a signed link names; raises
    SignatureInvalid, UrlExpired, or NotFound when its profile was deleted since."""
    path = SAMPLE_PATH.format(profile_id=profile_id)
    expires_s = verified_expiry(ctx.signing_key, path, expires, signature)
    if ctx.clock.now_ms() >= expires_s * 1000:
        raise UrlExpired("This link has expired; read the voice profile again for a fresh one.")
    profile = _find_premade(ctx, profile_id)
    if profile is None:
        stored = await ctx.store.get_voice_profile(profile_id)
        if stored is None:
            raise NotFound(f"No voice profile {profile_id!r}.")
        profile = _owned(stored)
    language = profile.languages[0] if profile.languages else "en"
    speech = await ctx.speech.synthesize(
        _SAMPLE_TEXT.get(language, _SAMPLE_TEXT["en"]), profile.voice
    )
    return speech.pcm, speech.sample_rate
