"""Minds a team shares: members with roles, invitations, and who may do what (docs/auth.md).

Items, in the Minds table:
  MIND#<mind id> / MEMBER#<sub>      a member: role, email, joined_at, invited_by; GSI `member`
                                     (member = the sub, joined_at) lists a person's minds
  MIND#<mind id> / INVITE#<inv id>   a pending invitation (role, email or user_id, expires_at)
  INVITEHASH#<hmac> / INVITEHASH     lookup from a presented token's keyed hash to its invitation
The mind item counts `member_count`, `owner_count` and `invitation_count`, moved in the same
transaction as what they count, under conditions: a mind never has more members or pending
invitations than allowed, and never fewer than one owner.

A mind created before members existed has no MEMBER# item and no counts: its `owner` attribute is
its one owner until the first change of membership writes both (`members.materialise`).
"""
